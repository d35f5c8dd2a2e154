/**
 * Disk full under the schema registry's file store (issue #22, "Disk full"): `tributary registry
 * start --data-dir DIR` as a real process, DIR a 1 MiB tmpfs (test/support/tmpfs.ts), a reader
 * polling the REST API the whole time (the next ids, every subject's latest version), and cycle
 * after cycle:
 *
 *   1. register a few new schemas (each under its own subject, and one more version of a shared
 *      subject) while there is room;
 *   2. fill the filesystem to its last page and try to register more: each attempt must be
 *      answered 5xx with Confluent's error body (`error_code` 50001, a message), and the schemas
 *      and versions registered before must still be served, unchanged;
 *   3. every `killEvery`-th cycle, SIGKILL the registry while the disk is full and start it again
 *      once the space is back;
 *   4. give the space back (delete the filler, or remount larger) and register again: accepted.
 * At the end, a clean stop and start, and a last read of everything.
 *
 * Invariants: a refused registration leaves no trace (its schema is under no id and in no
 * subject, after the space returns and after a restart); every acknowledged id and version is
 * served with its schema forever, before and after restarts; an id the reader was ever served
 * keeps the schema it was served with (a write that the full disk undid must never have been
 * visible); the registry process stays up while the disk is full.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, LOOPBACK } from '../services/network.js';
import { startDaemon, waitUntil, type Daemon } from '../services/process.js';
import type { ServiceRun } from '../services/run-dir.js';
import { residentBytes } from '../support/process-memory.js';
import { fillDisk, MIB, mountTmpfs, removeFiller, resizeTmpfs, unmountTmpfs } from '../support/tmpfs.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const CONTENT_TYPE = 'application/vnd.schemaregistry.v1+json';
const SHARED_SUBJECT = 'disk-full-shared-value';

export interface DiskFullRegistryOptions {
  readonly run: ServiceRun;
  readonly cycles: number;
  readonly random: () => number;
  /** SIGKILL the registry while the disk is full every this many cycles (0: never). */
  readonly killEvery?: number;
  /** Registrations tried while the disk is full, per cycle (default 5). */
  readonly attemptsWhileFull?: number;
  readonly say?: (line: string) => void;
}

export interface DiskFullRegistryResult {
  readonly cycles: number;
  readonly fills: number;
  readonly kills: number;
  /** Registrations answered 5xx while the disk was full. */
  readonly refused: number;
  /** Registrations acknowledged (200 with an id). */
  readonly registered: number;
  /** Acknowledged schemas or versions missing or changed at a later read. */
  readonly lost: number;
  /** Reads answered while the disk was full. */
  readonly readsWhileFull: number;
  /** Milliseconds from space returning to the next accepted registration. */
  readonly resumeMs: readonly number[];
  readonly peakRssBytes: number;
  readonly violations: readonly string[];
  readonly logFile: string;
}

interface Registered {
  readonly subject: string;
  readonly version: number;
  readonly schema: string;
}

interface Answer {
  readonly status: number;
  readonly body: unknown;
}

export async function runDiskFullRegistry(options: DiskFullRegistryOptions): Promise<DiskFullRegistryResult> {
  const say = options.say ?? (() => undefined);
  const port = await freePort();
  const folder = join(options.run.dir, `registry-disk-${port}`);
  const dataDir = join(folder, 'data');
  const logFile = join(folder, 'registry.log');
  let size = MIB;
  mountTmpfs(dataDir, size);
  const url = `http://${LOOPBACK}:${port}`;
  const violations: string[] = [];
  const byId = new Map<number, Registered>();
  const refusedSchemas = new Set<string>();
  /** What the reader was served for each id: it must never change. */
  const seenById = new Map<number, string>();
  const resumeMs: number[] = [];
  let fills = 0;
  let kills = 0;
  let refused = 0;
  let registered = 0;
  let lost = 0;
  let readsWhileFull = 0;
  let peakRssBytes = 0;
  let counter = 0;
  let generation = 0;
  let daemon: Daemon | undefined;

  const start = async (): Promise<void> => {
    generation += 1;
    daemon = startDaemon({
      run: options.run,
      name: `registry-disk-${port}-${generation}`,
      command: process.execPath,
      args: [join(root, 'bin', 'tributary.js'), 'registry', 'start', '--listen', `${LOOPBACK}:${port}`, '--data-dir', dataDir, '--log-level', 'warn'],
      logFile,
      cwd: root,
    });
    await waitUntil(async () => (await call('GET', '/subjects').catch(() => undefined))?.status === 200, { what: `registry on port ${port}`, timeoutMs: 30_000, daemons: [daemon] });
  };
  const call = async (method: string, path: string, body?: unknown): Promise<Answer> => {
    const response = await fetch(`${url}${path}`, {
      method,
      headers: { 'content-type': CONTENT_TYPE, accept: CONTENT_TYPE },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(15_000),
    });
    const text = await response.text();
    let parsed: unknown = text;
    try {
      parsed = JSON.parse(text);
    } catch {
      // Not JSON: kept as text (and a violation where JSON is due).
    }
    return { status: response.status, body: parsed };
  };
  const newSchema = (): string => {
    counter += 1;
    return JSON.stringify({ type: 'record', name: `DiskFull${counter}`, fields: [{ name: `f${counter}`, type: 'string' }, { name: 'pad', type: 'string', default: 'x'.repeat(Math.floor(options.random() * 2000)) }] });
  };
  /** Registers one new schema; records the outcome. Returns the HTTP status. */
  const register = async (subject: string, expectRefusal: boolean, when: string): Promise<number> => {
    const schema = newSchema();
    const answer = await call('POST', `/subjects/${subject}/versions`, { schema });
    const id = (answer.body as { id?: unknown }).id;
    if (answer.status === 200 && typeof id === 'number') {
      const version = await call('POST', `/subjects/${subject}`, { schema });
      const number = (version.body as { version?: unknown }).version;
      if (version.status !== 200 || typeof number !== 'number') violations.push(`${when}: schema ${id} registered under ${subject} is not found there (${version.status})`);
      else byId.set(id, { subject, version: number, schema });
      registered += 1;
      if (expectRefusal) say(`  ${when}: a registration fitted the full disk (id ${id})`);
      return 200;
    }
    refusedSchemas.add(schema);
    const errorCode = (answer.body as { error_code?: unknown }).error_code;
    const message = (answer.body as { message?: unknown }).message;
    if (answer.status < 500 || typeof errorCode !== 'number' || Math.floor(errorCode / 100) !== answer.status || typeof message !== 'string' || message === '') {
      violations.push(`${when}: a registration was answered ${answer.status} ${JSON.stringify(answer.body).slice(0, 200)}, not a 5xx with Confluent's error body`);
    } else if (!expectRefusal) {
      violations.push(`${when}: a registration with room on the disk was refused: ${answer.status} ${message}`);
    }
    if (expectRefusal) refused += 1;
    return answer.status;
  };
  /** Reads every acknowledged id and version back; returns how many reads answered. */
  const verify = async (when: string): Promise<number> => {
    let reads = 0;
    for (const [id, expected] of byId) {
      const schema = await call('GET', `/schemas/ids/${id}`);
      reads += 1;
      const served = (schema.body as { schema?: unknown }).schema;
      if (schema.status !== 200 || served !== expected.schema) {
        lost += 1;
        violations.push(`${when}: schema id ${id} answered ${schema.status} ${typeof served === 'string' ? 'with another schema' : JSON.stringify(schema.body).slice(0, 120)}`);
      }
      const version = await call('GET', `/subjects/${expected.subject}/versions/${expected.version}`);
      reads += 1;
      const body = version.body as { id?: unknown; schema?: unknown };
      if (version.status !== 200 || body.id !== id || body.schema !== expected.schema) {
        lost += 1;
        violations.push(`${when}: ${expected.subject} version ${expected.version} answered ${version.status} ${JSON.stringify(version.body).slice(0, 120)}, not schema ${id}`);
      }
    }
    // A refused schema is nowhere: not under the shared subject, not under an id.
    const versions = await call('GET', `/subjects/${SHARED_SUBJECT}/versions`);
    if (versions.status === 200 && Array.isArray(versions.body)) {
      const acknowledged = [...byId.values()].filter((entry) => entry.subject === SHARED_SUBJECT).map((entry) => entry.version);
      const extra = (versions.body as number[]).filter((version) => !acknowledged.includes(version));
      for (const version of extra) {
        const answer = await call('GET', `/subjects/${SHARED_SUBJECT}/versions/${version}`);
        const schema = (answer.body as { schema?: unknown }).schema;
        if (typeof schema === 'string' && refusedSchemas.has(schema)) violations.push(`${when}: ${SHARED_SUBJECT} version ${version} holds a schema whose registration was refused`);
      }
    }
    const max = Math.max(0, ...byId.keys(), ...seenById.keys());
    for (let id = 1; id <= max + 2; id += 1) {
      if (byId.has(id)) continue;
      const answer = await call('GET', `/schemas/ids/${id}`);
      const schema = (answer.body as { schema?: unknown }).schema;
      if (answer.status === 200 && typeof schema === 'string' && refusedSchemas.has(schema)) violations.push(`${when}: schema id ${id} holds a schema whose registration was refused`);
    }
    return reads;
  };

  let stopReader = false;
  const reader = async (): Promise<void> => {
    while (!stopReader) {
      try {
        const next = Math.max(0, ...byId.keys(), ...seenById.keys()) + 1;
        for (const id of [next, next + 1]) {
          const answer = await call('GET', `/schemas/ids/${id}`);
          const schema = (answer.body as { schema?: unknown }).schema;
          if (answer.status !== 200 || typeof schema !== 'string') continue;
          const before = seenById.get(id);
          if (before !== undefined && before !== schema) violations.push(`schema id ${id} was served with one schema and later with another`);
          seenById.set(id, schema);
        }
      } catch {
        // The registry is restarting.
      }
      await sleep(2);
    }
  };

  const rssTimer = setInterval(() => {
    peakRssBytes = Math.max(peakRssBytes, residentBytes(daemon?.pid));
  }, 200);
  let reading: Promise<void> | undefined;
  try {
    await start();
    const global = await call('PUT', '/config', { compatibility: 'NONE' });
    if (global.status !== 200) throw new Error(`setting compatibility NONE answered ${global.status}`);
    reading = reader();
    for (let cycle = 1; cycle <= options.cycles && violations.length === 0; cycle += 1) {
      const when = `cycle ${cycle}`;
      for (let i = 0; i < 2; i += 1) await register(`disk-full-${cycle}-${i}-value`, false, `${when}, room`);
      await register(SHARED_SUBJECT, false, `${when}, room`);
      const filler = fillDisk(dataDir);
      fills += 1;
      for (let i = 0; i < (options.attemptsWhileFull ?? 5); i += 1) {
        await register(i % 2 === 0 ? SHARED_SUBJECT : `disk-full-${cycle}-full-${i}-value`, true, `${when}, disk full`);
      }
      if (daemon?.hasExited() === true) {
        violations.push(`${when}: the registry process exited while the disk was full; see ${logFile}`);
        break;
      }
      readsWhileFull += await verify(`${when}, disk full`);
      const kill = (options.killEvery ?? 0) > 0 && cycle % (options.killEvery ?? 1) === 0;
      if (kill) {
        daemon?.signal('SIGKILL');
        await daemon?.exited;
        kills += 1;
      }
      let how: string;
      if (cycle % 4 === 0) {
        size += MIB;
        resizeTmpfs(dataDir, size);
        how = `remounted at ${size / MIB} MiB`;
      } else {
        how = 'filler deleted';
      }
      // The filler goes in either case: the store needs the room for the cycles to come.
      removeFiller(filler);
      const freedAt = Date.now();
      if (kill) {
        await start();
        await verify(`${when}, restarted after a SIGKILL on the full disk`);
      }
      const status = await register(`disk-full-${cycle}-after-value`, false, `${when}, space back (${how})`);
      if (status === 200) resumeMs.push(Date.now() - freedAt);
      await verify(`${when}, space back`);
      say(`cycle ${cycle}: ${how}${kill ? ', SIGKILL while full' : ''}; ${registered} registered, ${refused} refused so far`);
    }
    stopReader = true;
    await reading;
    if (daemon !== undefined && !daemon.hasExited()) {
      daemon.signal('SIGTERM');
      const code = await daemon.exited;
      if (code !== 0) violations.push(`the clean stop at the end exited with ${code}`);
      await start();
      await verify('after a clean restart at the end');
      // The reader's observations, against the store after everything.
      for (const [id, schema] of seenById) {
        const stored = (await call('GET', `/schemas/ids/${id}`)).body as { schema?: unknown };
        if (stored.schema !== schema) violations.push(`schema id ${id} was served to the reader with a schema the store does not hold after the restart`);
      }
    }
  } finally {
    stopReader = true;
    await reading?.catch(() => undefined);
    clearInterval(rssTimer);
    if (daemon !== undefined && !daemon.hasExited()) {
      daemon.signal('SIGKILL');
      await daemon.exited;
    }
    unmountTmpfs(dataDir);
  }
  return { cycles: fills, fills, kills, refused, registered, lost, readsWhileFull, resumeMs, peakRssBytes, violations, logFile };
}
