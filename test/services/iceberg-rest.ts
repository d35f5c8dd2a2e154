/**
 * A real Iceberg REST catalog: Apache Iceberg's own test server (org.apache.iceberg.rest.
 * RESTCatalogServer from iceberg-open-api 1.10.0's test fixtures, what the apache/iceberg-rest-fixture
 * Docker image runs), one JVM on the iceberg-rest-fixture jars. It serves the REST API over a
 * JdbcCatalog; its settings come from CATALOG_* environment variables (the fixture turns
 * CATALOG_A_B__C into the catalog property `a.b-c`):
 *
 *   CATALOG_REST_PORT   rest.port   the HTTP port (it listens on every interface; tests use loopback)
 *   CATALOG_URI         uri         the JDBC catalog's database: a sqlite file in the service folder
 *   CATALOG_WAREHOUSE   warehouse   where tables go when a create names no location
 *
 * Ready means GET /v1/config answers 200.
 */
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { javaCommand, javaEnvironment } from './java.js';
import { freePort, LOOPBACK } from './network.js';
import { startDaemon, waitUntil, type Daemon } from './process.js';
import { serviceDir, type ServiceRun } from './run-dir.js';
import { ensureJars, ICEBERG_REST_FIXTURE_JARS } from './service-jars.js';

const START_TIMEOUT_MS = 120_000;

export interface IcebergRestCatalogServer {
  /** `http://127.0.0.1:<port>`: the catalog's base URI (requests go to `<uri>/v1/…`). */
  readonly uri: string;
  /** The default warehouse folder (a local path). */
  readonly warehouseDir: string;
  /** The folder holding the server's jars (the Java checker runs on them too). */
  readonly jars: string;
  readonly daemon: Daemon;
  stop(): Promise<void>;
}

export async function startIcebergRestCatalog(run: ServiceRun, name = 'iceberg-rest', log: (line: string) => void = () => {}): Promise<IcebergRestCatalogServer> {
  const jars = await ensureJars(ICEBERG_REST_FIXTURE_JARS, log);
  const dir = serviceDir(run, name);
  const port = await freePort();
  const warehouseDir = join(dir, 'warehouse');
  const daemon = startDaemon({
    run,
    name,
    command: javaCommand(),
    args: ['-Xmx256m', '-XX:+UseSerialGC', '-cp', `${jars}/*`, 'org.apache.iceberg.rest.RESTCatalogServer'],
    logFile: join(dir, 'server.log'),
    cwd: dir,
    env: {
      ...javaEnvironment(),
      CATALOG_REST_PORT: String(port),
      CATALOG_URI: `jdbc:sqlite:${join(dir, 'catalog.db')}`,
      CATALOG_WAREHOUSE: pathToFileURL(warehouseDir).toString(),
    },
  });
  const uri = `http://${LOOPBACK}:${port}`;
  try {
    await waitUntil(async () => (await fetch(`${uri}/v1/config`, { signal: AbortSignal.timeout(2_000) })).status === 200, {
      what: `the Iceberg REST catalog at ${uri} to answer GET /v1/config`,
      timeoutMs: START_TIMEOUT_MS,
      intervalMs: 250,
      daemons: [daemon],
    });
  } catch (error) {
    await daemon.stop();
    throw error;
  }
  return { uri, warehouseDir, jars, daemon, stop: () => daemon.stop() };
}
