/**
 * The loader of the ZooKeeper fault runs (zookeeper.ts): a schema registry in this process, a
 * topic of Avro page views on a broker, a load into a local warehouse folder whose run lease is
 * the ephemeral `/etl/locks/<load>` in ZooKeeper, and runs of the real CLI
 * (`tributary etl run --load … --zookeeper …`) as OS processes that a scenario may SIGSTOP.
 *
 * The check is exactly once: every acknowledged (partition, offset) of the topic is in exactly one
 * data file of the warehouse, and nothing else is.
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Producer } from '../../src/client/producer.js';
import { createLogger } from '../../src/common/logger.js';
import { decodeDataFile } from '../../src/etl/files/data-files.js';
import { isHiddenName, topicDir } from '../../src/etl/layout.js';
import { expandOffsets } from '../../src/etl/load/extract.js';
import { openWarehouse } from '../../src/etl/warehouse/open-warehouse.js';
import type { WarehouseFileSystem } from '../../src/etl/warehouse/warehouse.js';
import { RegistryClient } from '../../src/registry/client.js';
import { AvroSerializer } from '../../src/registry/serde/serializer.js';
import { startRegistryServer, type RunningRegistry } from '../../src/registry/server.js';
import { loadFileText } from '../integration/etl/loader-support.js';
import type { ServiceRun } from '../services/run-dir.js';
import { startLineProcess, type LineProcess } from '../support/line-process.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const silent = createLogger({ name: 'zookeeper-chaos-loader', level: 'silent' });
const PAGE_VIEW = await readFile(join(root, 'schemas', 'PageViewEvent.avsc'), 'utf8');

export interface LoaderRunOutcome {
  /** Exit code, or the signal's name. */
  readonly exit: number | string;
  /** The `[CODE]` the command printed on failure, if any. */
  readonly code: string | undefined;
}

export interface ExactlyOnceReport {
  /** Acknowledged records of the topic. */
  readonly expected: number;
  /** Records found in the warehouse's data files. */
  readonly found: number;
  readonly missing: number;
  /** Records in more than one file (or twice in one), counting each extra copy. */
  readonly duplicated: number;
  /** Records in the warehouse that were never acknowledged. */
  readonly unexpected: number;
}

export class LoaderRig {
  /** Acknowledged end offset per partition (everything below it was acknowledged). */
  private readonly ends = new Map<number, number>();
  private runs = 0;
  private nextId = 0;

  private constructor(
    private readonly run: ServiceRun,
    private readonly registry: RunningRegistry,
    private readonly serializer: AvroSerializer,
    private readonly folder: string,
    private readonly warehouse: WarehouseFileSystem,
    readonly loadFile: string,
    readonly load: string,
    readonly topic: string,
    readonly partitions: number,
    private readonly bootstrap: readonly string[],
    private readonly zookeeper: string,
  ) {}

  /**
   * The registry (local folder) and the load file; `bootstrap` must already hold `topic` with
   * `partitions` partitions. `zookeeper` is the connect string with the cluster's chroot.
   */
  static async start(options: { run: ServiceRun; bootstrap: readonly string[]; zookeeper: string; topic: string; partitions: number; load?: string }): Promise<LoaderRig> {
    const folder = await mkdtemp(join(tmpdir(), 'tributary-zk-chaos-loader-'));
    const registry = await startRegistryServer({ host: '127.0.0.1', port: 0, dataDir: join(folder, 'registry'), logger: silent });
    const client = new RegistryClient({ url: registry.url });
    await client.register(`${options.topic}-value`, PAGE_VIEW);
    const load = options.load ?? 'zk-chaos-views';
    const warehouseUrl = join(folder, 'warehouse');
    const loadFile = join(folder, `${load}.yaml`);
    await writeFile(loadFile, loadFileText({ name: load, topic: options.topic, warehouse: { url: warehouseUrl, root: 'data' }, bootstrap: options.bootstrap, registryUrl: registry.url }));
    return new LoaderRig(options.run, registry, new AvroSerializer(client), folder, openWarehouse(warehouseUrl), loadFile, load, options.topic, options.partitions, options.bootstrap, options.zookeeper);
  }

  /** Produces `count` page views (acks=−1, spread over the partitions); resolves with how many were acknowledged. */
  async produce(count: number): Promise<number> {
    const producer = await Producer.connect({ bootstrap: [...this.bootstrap], acks: -1, lingerMs: 2, requestTimeoutMs: 10_000, deliveryTimeoutMs: 30_000, logger: silent });
    let acknowledged = 0;
    try {
      const byPartition = new Map<number, Buffer[]>();
      for (let index = 0; index < count; index += 1) {
        const id = (this.nextId += 1);
        const value = {
          header: { eventId: randomUUID(), time: Date.now(), server: `web-${id % 5}`, service: 'frontend' },
          memberId: id,
          pageKey: `page-${id % 17}`,
          url: `/p/${id}`,
          referrer: null,
          userAgent: 'chaos-agent',
        };
        const partition = id % this.partitions;
        const list = byPartition.get(partition) ?? [];
        list.push(await this.serializer.encode(`${this.topic}-value`, value, PAGE_VIEW));
        byPartition.set(partition, list);
      }
      for (const [partition, values] of byPartition) {
        try {
          const placed = await producer.send(this.topic, values.map((value) => ({ partition, value })));
          for (const metadata of placed) {
            // Offsets of one partition are acknowledged in order; a failed send leaves a hole the
            // loader would load as well (it may have been stored), so only contiguous acks count.
            const end = Number(metadata.offset) + 1;
            if (end > (this.ends.get(partition) ?? 0)) this.ends.set(partition, end);
            acknowledged += 1;
          }
        } catch {
          // Not acknowledged: what may have been stored is counted from the final read instead.
        }
      }
    } finally {
      await producer.close().catch(() => undefined);
    }
    return acknowledged;
  }

  /** Starts `tributary etl run` as its own process (a scenario may pause it). */
  startRun(): LineProcess {
    this.runs += 1;
    return startLineProcess({
      run: this.run,
      name: `zk-chaos-loader-${this.runs}-${Date.now()}`,
      command: process.execPath,
      args: [join(root, 'bin', 'tributary.js'), 'etl', 'run', '--load', this.loadFile, '--zookeeper', this.zookeeper],
      cwd: root,
    });
  }

  /** One run to its end. */
  async runOnce(): Promise<LoaderRunOutcome> {
    const child = this.startRun();
    const exit = await child.exited;
    return { exit, code: errorCodeOf(child.stderr()) };
  }

  /** Runs until one exits 0 (a run may fail while ZooKeeper elects a leader), at most `tries` runs. */
  async runUntilDone(tries = 5): Promise<LoaderRunOutcome[]> {
    const outcomes: LoaderRunOutcome[] = [];
    for (let attempt = 1; attempt <= tries; attempt += 1) {
      const outcome = await this.runOnce();
      outcomes.push(outcome);
      if (outcome.exit === 0) break;
    }
    return outcomes;
  }

  /** The published manifests' attempts (`_etl/<load>/commits/<seq>.json`). */
  async committedAttempts(): Promise<string[]> {
    const folder = `data/_etl/${this.load}/commits`;
    const entries = await this.warehouse.list(folder).catch(() => []);
    const attempts: string[] = [];
    for (const entry of entries) {
      if (!entry.name.endsWith('.json')) continue;
      const manifest = JSON.parse((await this.warehouse.open(entry.path)).toString('utf8')) as { attempt?: string };
      if (manifest.attempt !== undefined) attempts.push(manifest.attempt);
    }
    return attempts;
  }

  /**
   * Exactly once: every offset below each partition's acknowledged end (`upTo`, default what this
   * rig saw acknowledged) in exactly one data file.
   */
  async checkExactlyOnce(upTo: ReadonlyMap<number, number> = this.ends): Promise<ExactlyOnceReport> {
    const counts = new Map<string, number>();
    const walk = async (path: string): Promise<string[]> => {
      const files: string[] = [];
      for (const entry of await this.warehouse.list(path).catch(() => [])) {
        if (isHiddenName(entry.name)) continue;
        files.push(...(entry.type === 'directory' ? await walk(entry.path) : [entry.path]));
      }
      return files;
    };
    for (const file of await walk(topicDir('data', this.topic))) {
      const decoded = await decodeDataFile(await this.warehouse.open(file), 'avro');
      const partition = decoded.metadata['tributary.partition'];
      for (const offset of expandOffsets(decoded.metadata['tributary.offsets'] ?? '')) {
        const name = `${partition}/${offset}`;
        counts.set(name, (counts.get(name) ?? 0) + 1);
      }
    }
    let expected = 0;
    let missing = 0;
    let found = 0;
    let duplicated = 0;
    let unexpected = 0;
    for (const [partition, end] of upTo) {
      expected += end;
      for (let offset = 0; offset < end; offset += 1) if (!counts.has(`${partition}/${offset}`)) missing += 1;
    }
    for (const [name, count] of counts) {
      found += count;
      duplicated += count - 1;
      const [partition, offset] = name.split('/').map(Number);
      if (partition === undefined || offset === undefined || offset >= (upTo.get(partition) ?? 0)) unexpected += 1;
    }
    return { expected, found, missing, duplicated, unexpected };
  }

  /** The acknowledged ends, for checks against a broker's final read. */
  acknowledgedEnds(): ReadonlyMap<number, number> {
    return this.ends;
  }

  async close(): Promise<void> {
    await this.registry.close().catch(() => undefined);
    await rm(this.folder, { recursive: true, force: true });
  }
}

/** The `[CODE]` a failed CLI command printed last. */
function errorCodeOf(stderr: string): string | undefined {
  const codes = [...stderr.matchAll(/\[([A-Z][A-Z0-9_]+)\]/g)].map((match) => match[1]);
  return codes.at(-1);
}
