/**
 * Disk full under the loader's local-folder warehouse (issue #22, "Disk full"): a real broker
 * process, a registry, `tributary etl run` as a real process loading a topic of Avro page views
 * into a warehouse folder on a small tmpfs (test/support/tmpfs.ts), and cycle after cycle:
 *
 *   1. produce a few hundred records over 3 partitions and 3 event hours;
 *   2. fill the warehouse's filesystem — to its last page, or (every other cycle) leaving a little
 *      room, so that the run fails in the middle of staging or of its commit — and run the load:
 *      it must exit non-zero with a clear error (WAREHOUSE_QUOTA_EXCEEDED, "no space"), commit
 *      nothing, and leave no partial file in the published hour folders;
 *   3. give the space back (delete the filler, or remount larger) and run the load again: it must
 *      commit, and the warehouse then hold every produced record exactly once.
 *
 * Invariants: a run on the full disk commits nothing (the commit log's published set and the
 * published data files are as before); the next run after the space returns loads exactly what
 * was produced, each record once, with the contents produced.
 */
import { spawn } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { KafkaConnection } from '../../src/client/connection.js';
import { Producer } from '../../src/client/producer.js';
import { createLogger } from '../../src/common/logger.js';
import { decodeDataFile } from '../../src/etl/files/data-files.js';
import { isHiddenName, topicDir } from '../../src/etl/layout.js';
import { readCommitLog } from '../../src/etl/load/commit-log.js';
import { expandOffsets } from '../../src/etl/load/extract.js';
import { openWarehouse } from '../../src/etl/warehouse/open-warehouse.js';
import type { WarehouseFileSystem } from '../../src/etl/warehouse/warehouse.js';
import { CreateTopicsApi } from '../../src/protocol/apis/create-topics.js';
import { parseAvroSchema } from '../../src/registry/avro-schema.js';
import { RegistryClient } from '../../src/registry/client.js';
import { AvroDeserializer } from '../../src/registry/serde/deserializer.js';
import { AvroSerializer } from '../../src/registry/serde/serializer.js';
import { startRegistryServer } from '../../src/registry/server.js';
import { LOOPBACK } from '../services/network.js';
import type { ServiceRun } from '../services/run-dir.js';
import { loadFileText } from '../integration/etl/loader-support.js';
import { startBrokerProcess } from '../support/brokers.js';
import { residentBytes } from '../support/process-memory.js';
import { fillDisk, MIB, mountTmpfs, removeFiller, resizeTmpfs, unmountTmpfs } from '../support/tmpfs.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const TOPIC = 'disk-full-views';
const LOAD = 'disk-full-load';
const PARTITIONS = 3;
const FIRST_HOUR = Date.UTC(2026, 10, 29, 10);
const HOUR = 3_600_000;
const silent = createLogger({ name: 'disk-warehouse', level: 'silent' });

export interface DiskFullWarehouseOptions {
  readonly run: ServiceRun;
  readonly cycles: number;
  readonly random: () => number;
  /** Records produced per cycle (default 300). */
  readonly recordsPerCycle?: number;
  readonly say?: (line: string) => void;
}

export interface DiskFullWarehouseResult {
  readonly cycles: number;
  readonly fills: number;
  /** Runs on the full disk that failed with a clear error and committed nothing. */
  readonly refusedRuns: number;
  /** Runs on the full disk that committed anyway (the data fitted): checked like any other. */
  readonly fittedRuns: number;
  readonly commits: number;
  readonly produced: number;
  /** Produced records missing from the warehouse or stored with other contents, at the end. */
  readonly lost: number;
  readonly duplicated: number;
  /** Milliseconds from space returning to the end of the next committed run. */
  readonly resumeMs: readonly number[];
  /** Peak RSS of the `etl run` processes. */
  readonly peakRssBytes: number;
  readonly violations: readonly string[];
}

interface RunOutcome {
  readonly status: number | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly peakRssBytes: number;
}

function runEtl(args: readonly string[]): Promise<RunOutcome> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [join(root, 'bin', 'tributary.js'), 'etl', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    let peakRssBytes = 0;
    const timer = setInterval(() => {
      peakRssBytes = Math.max(peakRssBytes, residentBytes(child.pid));
    }, 100);
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.once('close', (status) => {
      clearInterval(timer);
      resolve({ status, stdout, stderr, peakRssBytes });
    });
  });
}

/** The published data files of the topic (hour folders, hidden names left out), by path. */
async function publishedFiles(warehouse: WarehouseFileSystem): Promise<string[]> {
  const walk = async (path: string): Promise<string[]> => {
    const entries = await warehouse.list(path).catch(() => []);
    const files: string[] = [];
    for (const entry of entries) {
      if (isHiddenName(entry.name) || entry.name.startsWith('.')) continue;
      files.push(...(entry.type === 'directory' ? await walk(entry.path) : [entry.path]));
    }
    return files;
  };
  return (await walk(topicDir('data', TOPIC))).sort();
}

const hashOf = (value: unknown): string => createHash('sha256').update(JSON.stringify(value)).digest('hex');

export async function runDiskFullWarehouse(options: DiskFullWarehouseOptions): Promise<DiskFullWarehouseResult> {
  const say = options.say ?? (() => undefined);
  const folder = join(options.run.dir, `warehouse-disk-${process.pid}-${Date.now()}`);
  const warehouseDir = join(folder, 'warehouse');
  mkdirSync(folder, { recursive: true });
  let size = 4 * MIB;
  mountTmpfs(warehouseDir, size);
  const violations: string[] = [];
  const produced = new Map<string, string>();
  const resumeMs: number[] = [];
  let fills = 0;
  let refusedRuns = 0;
  let fittedRuns = 0;
  let commits = 0;
  let lost = 0;
  let duplicated = 0;
  let peakRssBytes = 0;
  let counter = 0;
  const broker = await startBrokerProcess({ run: options.run, id: 950 + Math.floor(options.random() * 40), settings: { 'log.retention.ms': '-1' } });
  const registry = await startRegistryServer({ host: LOOPBACK, port: 0, dataDir: join(folder, 'registry'), logger: silent });
  const client = new RegistryClient({ url: registry.url });
  const warehouse = openWarehouse(warehouseDir);
  try {
    const connection = await KafkaConnection.open(LOOPBACK, broker.port, { requestTimeoutMs: 30_000 });
    try {
      const answer = await connection.request(CreateTopicsApi, 4, {
        topics: [{ name: TOPIC, numPartitions: PARTITIONS, replicationFactor: -1, assignments: [], configs: [] }],
        timeoutMs: 30_000,
        validateOnly: false,
      });
      if (answer.topics[0]?.errorCode !== 0) throw new Error(`creating ${TOPIC} answered ${answer.topics[0]?.errorCode}`);
    } finally {
      connection.close();
    }
    const schema = readFileSync(join(root, 'schemas', 'PageViewEvent.avsc'), 'utf8');
    await client.register(`${TOPIC}-value`, schema);
    const reader = parseAvroSchema(schema);
    const loadFile = join(folder, `${LOAD}.yaml`);
    writeFileSync(loadFile, loadFileText({ name: LOAD, topic: TOPIC, warehouse: { url: warehouseDir, root: 'data' }, bootstrap: [broker.bootstrap], registryUrl: registry.url }));
    const serializer = new AvroSerializer(client);
    const deserializer = new AvroDeserializer(client);
    const producer = await Producer.connect({ bootstrap: [broker.bootstrap], acks: -1, lingerMs: 2, logger: silent });
    const produce = async (count: number): Promise<void> => {
      const perPartition = new Map<number, { value: Buffer; timestamp: number }[]>();
      for (let index = 0; index < count; index += 1) {
        counter += 1;
        const time = FIRST_HOUR + Math.floor(options.random() * 3 * HOUR);
        const value = {
          header: { eventId: randomUUID(), time, server: `web-${counter % 5}`, service: 'frontend' },
          memberId: counter % 3 === 0 ? null : counter,
          pageKey: `page-${counter % 17}`,
          url: `/p/${counter}?pad=${'z'.repeat(Math.floor(options.random() * 400))}`,
          referrer: null,
          userAgent: counter % 4 === 0 ? null : 'chaos-agent',
        };
        const bytes = await serializer.encode(`${TOPIC}-value`, value, schema);
        const partition = counter % PARTITIONS;
        const list = perPartition.get(partition) ?? [];
        list.push({ value: bytes, timestamp: time });
        perPartition.set(partition, list);
      }
      for (const [partition, records] of perPartition) {
        const placed = await producer.send(TOPIC, records.map((record) => ({ ...record, partition })));
        for (const [index, metadata] of placed.entries()) {
          const record = records[index];
          if (record === undefined) continue;
          produced.set(`${partition}/${metadata.offset}`, hashOf(await deserializer.decode(record.value, reader)));
        }
      }
    };
    try {
      for (let cycle = 1; cycle <= options.cycles && violations.length === 0; cycle += 1) {
        const when = `cycle ${cycle}`;
        await produce(options.recordsPerCycle ?? 300);
        const before = { published: [...(await readCommitLog(warehouse, 'data', LOAD)).published].sort(), files: await publishedFiles(warehouse) };
        const leave = cycle % 2 === 0 ? 4 * 1024 + Math.floor(options.random() * 60 * 1024) : 0;
        const filler = fillDisk(warehouseDir, `filler-${cycle}`, leave);
        fills += 1;
        const full = await runEtl(['run', '--load', loadFile]);
        peakRssBytes = Math.max(peakRssBytes, full.peakRssBytes);
        const after = { published: [...(await readCommitLog(warehouse, 'data', LOAD)).published].sort(), files: await publishedFiles(warehouse) };
        if (full.status === 0) {
          // The records fitted the room left: a commit like any other, checked at the end.
          fittedRuns += 1;
          commits += 1;
        } else {
          refusedRuns += 1;
          const said = full.stderr.split('\n').filter((line) => !line.startsWith('{')).join(' ');
          if (!/WAREHOUSE_QUOTA_EXCEEDED|no space/i.test(said)) violations.push(`${when}: the run on the full disk failed without saying the disk is full: ${said.slice(0, 300)}`);
          if (after.published.join(',') !== before.published.join(',')) violations.push(`${when}: the failed run published commits ${after.published.filter((seq) => !before.published.includes(seq)).join(', ')}`);
          if (after.files.join(',') !== before.files.join(',')) violations.push(`${when}: the failed run changed the published data files`);
        }
        let how: string;
        if (cycle % 4 === 0) {
          size += MIB;
          resizeTmpfs(warehouseDir, size);
          how = `remounted at ${size / MIB} MiB`;
        } else {
          how = 'filler deleted';
        }
        removeFiller(filler);
        const freedAt = Date.now();
        const again = await runEtl(['run', '--load', loadFile]);
        peakRssBytes = Math.max(peakRssBytes, again.peakRssBytes);
        if (again.status !== 0) violations.push(`${when}: the run after the space returned failed: ${again.stderr.split('\n').filter((line) => !line.startsWith('{')).join(' ').slice(0, 300)}`);
        else {
          commits += 1;
          resumeMs.push(Date.now() - freedAt);
        }
        say(`cycle ${cycle}: filled ${(filler.bytes / MIB).toFixed(1)} MiB${leave > 0 ? ` leaving ${Math.round(leave / 1024)} KiB` : ''}, run ${full.status === 0 ? 'fitted and committed' : 'refused'}; ${how}; next run ${again.status === 0 ? 'committed' : 'FAILED'}; ${produced.size} produced`);
      }
      // Exactly once: every produced record once, with its contents.
      const found = new Map<string, string>();
      for (const file of await publishedFiles(warehouse)) {
        const decoded = await decodeDataFile(await warehouse.open(file), 'avro');
        const offsets = expandOffsets(decoded.metadata['tributary.offsets'] ?? '');
        decoded.records.forEach((value, index) => {
          const key = `${decoded.metadata['tributary.partition']}/${offsets[index]}`;
          if (found.has(key)) {
            duplicated += 1;
            violations.push(`record ${key} is stored twice (again in ${file})`);
          }
          found.set(key, hashOf(value));
        });
      }
      for (const [key, hash] of produced) {
        const stored = found.get(key);
        if (stored === hash) continue;
        lost += 1;
        if (lost <= 10) violations.push(`record ${key} is ${stored === undefined ? 'missing from' : 'stored with other contents in'} the warehouse`);
      }
      for (const key of found.keys()) if (!produced.has(key)) violations.push(`record ${key} in the warehouse was never produced`);
    } finally {
      await producer.close();
    }
  } finally {
    await registry.close().catch(() => undefined);
    await broker.stop().catch(() => undefined);
    unmountTmpfs(warehouseDir);
    rmSync(folder, { recursive: true, force: true });
  }
  return { cycles: fills, fills, refusedRuns, fittedRuns, commits, produced: produced.size, lost, duplicated, resumeMs, peakRssBytes, violations };
}
