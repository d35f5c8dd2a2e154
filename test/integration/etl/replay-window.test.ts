/**
 * Replays and rollbacks end to end with real parts: `tributary etl replay|rollback|status` as real
 * processes, a real broker process, a real registry server, and each warehouse (a local folder, and
 * real HDFS through WebHDFS). A load whose transformation maps `page` from the wrong field is run
 * over three event hours; the load file is fixed and two hours are replayed: exactly those hours
 * hold the fixed records, with the same counts, the third is byte-identical, and rollback restores
 * the loaded version byte for byte. Also: a replay killed mid-swap is finished by the next one; a
 * replay and a rollback killed after their publish and run again change nothing more and say so;
 * offsets deleted by retention stop a replay before it changes anything; the runs' ZooKeeper lease
 * keeps a replay out; `etl status --watch` refreshes until interrupted.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClusterClient } from '../../../src/client/cluster-client.js';
import { SimpleConsumer } from '../../../src/client/simple-consumer.js';
import { ZooKeeperStore } from '../../../src/coordination/zookeeper-store.js';
import { readCommitLog } from '../../../src/etl/load/commit-log.js';
import { expandOffsets } from '../../../src/etl/load/extract.js';
import { decodeDataFile } from '../../../src/etl/files/data-files.js';
import { acquireLease } from '../../../src/etl/load/lease.js';
import { swapClaimPath, swapPublishedPath } from '../../../src/etl/replay/layout.js';
import type { WarehouseFileSystem } from '../../../src/etl/warehouse/warehouse.js';
import { zookeeperAddress } from '../services.js';
import {
  createTopic,
  makeWarehouse,
  messagesOf,
  producePageViews,
  registerPageViews,
  runEtl,
  silent,
  startLoaderEnvironment,
  writeLoadFile,
  type LoaderEnvironment,
  type ProducedRecord,
  type TestWarehouse,
  type WarehouseKind,
} from './loader-support.js';

const SLOW = 300_000;
const HOURS = ['2026-11-29T10', '2026-11-29T11', '2026-11-29T12'] as const;
/** The mapping bug: `page` read from `url`. */
const BUGGY = 'transform:\n  fields:\n    eventId: header.eventId\n    time: header.time\n    server: header.server\n    page: url\n';
/** The fix. */
const FIXED = 'transform:\n  fields:\n    eventId: header.eventId\n    time: header.time\n    server: header.server\n    page: pageKey\n';

let env: LoaderEnvironment;
const cleanups: (() => Promise<void>)[] = [];

beforeAll(async () => {
  env = await startLoaderEnvironment({ 'log.retention.check.interval.ms': '200' });
}, 120_000);

afterAll(async () => {
  for (const cleanup of cleanups) await cleanup().catch(() => undefined);
  await env?.close();
}, 60_000);

let names = 0;
function fresh(kind: WarehouseKind, what: string): { name: string; topic: string; warehouse: TestWarehouse } {
  names += 1;
  const name = `${what}-${kind === 'HDFS' ? 'hdfs' : 'local'}-${names}-${randomBytes(2).toString('hex')}`;
  const warehouse = makeWarehouse(kind, env, name);
  cleanups.push(() => warehouse.cleanup());
  return { name, topic: `t-${name}`, warehouse };
}

/** A load file as loader-support writes it, plus a transformation section. */
async function loadFile(name: string, topic: string, warehouse: TestWarehouse, transform: string): Promise<string> {
  const file = await writeLoadFile(env, { name, topic, warehouse });
  await writeFile(file, `${await readFile(file, 'utf8')}${transform}`);
  return file;
}

function hourFolder(warehouse: TestWarehouse, topic: string, hour: string): string {
  return `${warehouse.root}/${topic}/hourly/${hour.slice(0, 4)}/${hour.slice(5, 7)}/${hour.slice(8, 10)}/${hour.slice(11, 13)}`;
}

/** name → bytes of every file under `folder` (recursively), relative to it; {} if it is missing. */
async function filesUnder(warehouse: WarehouseFileSystem, folder: string): Promise<Record<string, Buffer>> {
  const files: Record<string, Buffer> = {};
  const walk = async (path: string): Promise<void> => {
    const entries = await warehouse.list(path).catch(() => []);
    for (const entry of entries) {
      if (entry.type === 'directory') await walk(entry.path);
      else files[entry.path.slice(folder.length + 1)] = await warehouse.open(entry.path);
    }
  };
  await walk(folder);
  return files;
}

function expectSameBytes(actual: Record<string, Buffer>, expected: Record<string, Buffer>, what: string): void {
  expect(Object.keys(actual).sort(), what).toEqual(Object.keys(expected).sort());
  for (const [name, bytes] of Object.entries(expected)) expect(actual[name]?.equals(bytes), `${what}: ${name}`).toBe(true);
}

interface StoredView {
  readonly page: string;
  readonly time: number;
}

/** The records of an hour folder by `partition/offset`. */
async function viewsIn(warehouse: TestWarehouse, topic: string, hour: string): Promise<Map<string, StoredView>> {
  const found = new Map<string, StoredView>();
  for (const [name, bytes] of Object.entries(await filesUnder(warehouse.warehouse, hourFolder(warehouse, topic, hour)))) {
    const decoded = await decodeDataFile(bytes, 'avro');
    const offsets = expandOffsets(decoded.metadata['tributary.offsets'] ?? '');
    decoded.records.forEach((record, index) => {
      const key = `${decoded.metadata['tributary.partition']}/${offsets[index]}`;
      if (found.has(key)) throw new Error(`${key} twice in ${hour} (${name})`);
      found.set(key, record as StoredView);
    });
  }
  return found;
}

function producedIn(produced: readonly ProducedRecord[], hour: string): string[] {
  return produced
    .filter((record) => record.hour === hour)
    .map((record) => `${record.partition}/${record.offset}`)
    .sort();
}

/** Loads 3 hours in two runs with the buggy mapping; returns what was produced and the bytes of each hour. */
async function loadThreeHours(name: string, topic: string, warehouse: TestWarehouse, partitions = 4): Promise<{ load: string; produced: ProducedRecord[]; before: Record<string, Record<string, Buffer>> }> {
  await createTopic(env.broker.bootstrap, topic, partitions);
  await registerPageViews(env.registryClient, topic);
  const load = await loadFile(name, topic, warehouse, BUGGY);
  const produced = await producePageViews(env, topic, { count: 240, partitions, hours: 3 });
  const first = await runEtl(['run', '--load', load]);
  expect(first.status, first.stderr).toBe(0);
  produced.push(...(await producePageViews(env, topic, { count: 60, partitions, hours: 3, firstId: 240 })));
  const second = await runEtl(['run', '--load', load]);
  expect(second.status, second.stderr).toBe(0);
  const before: Record<string, Record<string, Buffer>> = {};
  for (const hour of HOURS) {
    before[hour] = await filesUnder(warehouse.warehouse, hourFolder(warehouse, topic, hour));
    const views = await viewsIn(warehouse, topic, hour);
    expect([...views.keys()].sort(), hour).toEqual(producedIn(produced, hour));
    for (const view of views.values()) expect(view.page).toMatch(/^\/p\//);
  }
  return { load, produced, before };
}

async function fixLoadFile(load: string): Promise<void> {
  const text = await readFile(load, 'utf8');
  await writeFile(load, text.replace(BUGGY, FIXED));
}

describe.each<WarehouseKind>(['local folder', 'HDFS'])('replay into %s', (kind) => {
  it(
    'after a transformation fix, two replayed hours hold the fixed records with the same counts, the third is untouched; rollback restores them byte for byte',
    async () => {
      const { name, topic, warehouse } = fresh(kind, 'fix');
      const { load, produced, before } = await loadThreeHours(name, topic, warehouse);
      await fixLoadFile(load);

      const replay = await runEtl(['replay', '--load', load, '--from', `${HOURS[0]}:00Z`, '--to', HOURS[2], '--reason', 'page came from url']);
      expect(replay.status, replay.stderr).toBe(0);
      expect(replay.stdout).toContain(`replay 3 of load ${name}, hours [2026-11-29T10:00:00.000Z, 2026-11-29T12:00:00.000Z): page came from url`);
      expect(replay.stdout).toMatch(/read \d+ offset ranges of 4 partitions again \(reader schema t-[^:]+: t-\S+-value version 2, id \d+\)/);
      for (const hour of [HOURS[0], HOURS[1]]) {
        const count = producedIn(produced, hour).length;
        const files = Object.keys(before[hour]!).length;
        expect(replay.stdout).toMatch(new RegExp(`${topic}\\s+${hour}\\s+1 → 2\\s+${count} → ${count}\\s+${files} → ${files}\\s+${files} rewritten files; ${count} records changed; output schema changed; reader schema id \\d+`));
        const views = await viewsIn(warehouse, topic, hour);
        expect([...views.keys()].sort(), hour).toEqual(producedIn(produced, hour));
        for (const view of views.values()) {
          expect(view.page).toMatch(/^page-\d+$/);
          expect(new Date(view.time).toISOString().slice(0, 13)).toBe(hour);
        }
        const versionOne = `${warehouse.root}/_etl/${name}/versions/${topic}/${hour.slice(0, 4)}/${hour.slice(5, 7)}/${hour.slice(8, 10)}/${hour.slice(11, 13)}/1`;
        expectSameBytes(await filesUnder(warehouse.warehouse, versionOne), before[hour]!, `kept version 1 of ${hour}`);
      }
      expectSameBytes(await filesUnder(warehouse.warehouse, hourFolder(warehouse, topic, HOURS[2])), before[HOURS[2]]!, `hour ${HOURS[2]}`);
      expect(await warehouse.warehouse.stat(swapPublishedPath(warehouse.root, name, 3))).toBeDefined();

      // A run afterwards loads nothing again.
      const run = await runEtl(['run', '--load', load]);
      expect(run.status, run.stderr).toBe(0);
      expect(run.stdout).toContain('nothing new to load');

      const status = await runEtl(['status', '--load', load]);
      expect(status.stdout).toContain(`3 replay at `);
      expect(status.stdout).toContain(`${topic} ${HOURS[0]}  version 2 live, ${producedIn(produced, HOURS[0]).length} records; kept: 1`);

      for (const hour of [HOURS[0], HOURS[1]]) {
        const rollback = await runEtl(['rollback', '--load', load, '--hour', hour, '--topic', topic, '--reason', 'compare with the old report']);
        expect(rollback.status, rollback.stderr).toBe(0);
        expect(rollback.stdout).toMatch(new RegExp(`${topic}\\s+${hour}\\s+2 → 1\\s+`));
        expectSameBytes(await filesUnder(warehouse.warehouse, hourFolder(warehouse, topic, hour)), before[hour]!, `hour ${hour} after rollback`);
      }
      // The same rollback again goes no further back: it says the hour was rolled back already.
      const again = await runEtl(['rollback', '--load', load, '--hour', HOURS[0]]);
      expect(again.status, again.stderr).toBe(0);
      expect(again.stdout).toContain(`hour ${topic} ${HOURS[0]}: already rolled back by rollback 4 (version 2 → 1); version 1 is live; nothing changed`);
      const never = await runEtl(['rollback', '--load', load, '--hour', HOURS[2]]);
      expect(never.status).toBe(1);
      expect(messagesOf(never)).toContain(`no topic of load ${name} has an earlier version of hour 2026-11-29T12:00:00.000Z`);
      expect(messagesOf(never)).toContain('[ETL_ROLLBACK_NO_VERSION]');
    },
    SLOW,
  );
});

describe('replay and rollback run again after a kill (HDFS)', () => {
  it(
    'a replay killed after its publish and run again adds no version and says so; a rollback killed after its publish and run again goes no further; the hours end byte for byte as loaded',
    async () => {
      const { name, topic, warehouse } = fresh('HDFS', 'rerun');
      const { load, before } = await loadThreeHours(name, topic, warehouse, 2);
      await fixLoadFile(load);
      const window = ['--from', HOURS[0], '--to', HOURS[2]];

      const killed = await runEtl(['replay', '--load', load, ...window], { TRIBUTARY_ETL_FAILPOINT: 'swap-after-publish' });
      expect(killed.signal, killed.stderr).toBe('SIGKILL');
      expect(await warehouse.warehouse.stat(swapPublishedPath(warehouse.root, name, 3))).toBeDefined();
      const replayed: Record<string, Record<string, Buffer>> = {};
      for (const hour of [HOURS[0], HOURS[1]]) replayed[hour] = await filesUnder(warehouse.warehouse, hourFolder(warehouse, topic, hour));

      const again = await runEtl(['replay', '--load', load, ...window]);
      expect(again.status, again.stderr).toBe(0);
      expect(again.stdout).toContain(`replay of load ${name}, hours [2026-11-29T10:00:00.000Z, 2026-11-29T12:00:00.000Z): every hour is identical to its live version; nothing published`);
      for (const hour of [HOURS[0], HOURS[1]]) {
        expect(again.stdout).toContain(`hour ${topic} ${hour}: output identical to the live version 2; nothing published`);
        expectSameBytes(await filesUnder(warehouse.warehouse, hourFolder(warehouse, topic, hour)), replayed[hour]!, `hour ${hour} after the second replay`);
      }
      // No fence and no claim: commit 4 and replay 4 do not exist; nothing is left in staging.
      expect((await readCommitLog(warehouse.warehouse, warehouse.root, name)).lastClaimed).toBe(3);
      expect(await warehouse.warehouse.stat(swapClaimPath(warehouse.root, name, 4))).toBeUndefined();
      expect(await warehouse.warehouse.list(`${warehouse.root}/_etl/${name}/replays/staging`).catch(() => [])).toEqual([]);

      const rollbackKilled = await runEtl(['rollback', '--load', load, ...window], { TRIBUTARY_ETL_FAILPOINT: 'swap-after-publish' });
      expect(rollbackKilled.signal, rollbackKilled.stderr).toBe('SIGKILL');
      expect(await warehouse.warehouse.stat(swapPublishedPath(warehouse.root, name, 4))).toBeDefined();
      const rollbackAgain = await runEtl(['rollback', '--load', load, ...window]);
      expect(rollbackAgain.status, rollbackAgain.stderr).toBe(0);
      expect(rollbackAgain.stdout).toContain(`rollback of load ${name}, hours [2026-11-29T10:00:00.000Z, 2026-11-29T12:00:00.000Z): no hour needs rolling back; nothing published`);
      for (const hour of [HOURS[0], HOURS[1]]) expect(rollbackAgain.stdout).toContain(`hour ${topic} ${hour}: already rolled back by rollback 4 (version 2 → 1); version 1 is live; nothing changed`);
      expect(await warehouse.warehouse.stat(swapClaimPath(warehouse.root, name, 5))).toBeUndefined();
      for (const hour of HOURS) expectSameBytes(await filesUnder(warehouse.warehouse, hourFolder(warehouse, topic, hour)), before[hour]!, `hour ${hour} after the rollbacks`);

      const status = await runEtl(['status', '--load', load]);
      expect(status.stdout).toContain(`${topic} ${HOURS[0]}  version 1 live,`);
      expect(status.stdout).toContain('kept: 2');
    },
    SLOW,
  );
});

describe('replay crash and refusals', () => {
  it(
    'a replay killed between the two renames of an hour (its folder moved away, the new one not yet in place) is finished by the next replay',
    async () => {
      const { name, topic, warehouse } = fresh('HDFS', 'crash');
      const { load, produced, before } = await loadThreeHours(name, topic, warehouse, 2);
      await fixLoadFile(load);

      const killed = await runEtl(['replay', '--load', load, '--from', HOURS[0], '--to', HOURS[2]], { TRIBUTARY_ETL_FAILPOINT: 'swap-after-rename:1' });
      expect(killed.signal, killed.stderr).toBe('SIGKILL');
      expect(await warehouse.warehouse.stat(swapClaimPath(warehouse.root, name, 3))).toBeDefined();
      expect(await warehouse.warehouse.stat(swapPublishedPath(warehouse.root, name, 3))).toBeUndefined();
      expect(await warehouse.warehouse.stat(hourFolder(warehouse, topic, HOURS[0]))).toBeUndefined();

      const finished = await runEtl(['replay', '--load', load, '--from', HOURS[0], '--to', HOURS[2]]);
      expect(finished.status, finished.stderr).toBe(0);
      expect(finished.stdout).toContain(`replay 3 of load ${name}, hours [2026-11-29T10:00:00.000Z, 2026-11-29T12:00:00.000Z) (claimed by an earlier attempt that stopped; finished now)`);
      for (const hour of [HOURS[0], HOURS[1]]) {
        const views = await viewsIn(warehouse, topic, hour);
        expect([...views.keys()].sort(), hour).toEqual(producedIn(produced, hour));
        for (const view of views.values()) expect(view.page).toMatch(/^page-\d+$/);
      }
      expectSameBytes(await filesUnder(warehouse.warehouse, hourFolder(warehouse, topic, HOURS[2])), before[HOURS[2]]!, `hour ${HOURS[2]}`);
      expect(await warehouse.warehouse.list(`${warehouse.root}/_etl/${name}/replays/staging`).catch(() => [])).toEqual([]);
    },
    SLOW,
  );

  it(
    'stops before changing anything when retention deleted offsets that fed the window, listing the missing ranges',
    async () => {
      const { name, topic, warehouse } = fresh('HDFS', 'gone');
      await createTopic(env.broker.bootstrap, topic, 2, { 'segment.bytes': '1024', 'retention.bytes': '4096' });
      await registerPageViews(env.registryClient, topic);
      const load = await loadFile(name, topic, warehouse, BUGGY);
      await producePageViews(env, topic, { count: 10, partitions: 2, hours: 3 });
      expect((await runEtl(['run', '--load', load])).status).toBe(0);
      // A burst into partition 0 makes retention delete its first records, which commit 1 loaded.
      await producePageViews(env, topic, { count: 400, partitions: 2, partition: 0, hours: 3, firstId: 10, perSend: 20 });
      await expect.poll(() => logStartOf(topic, 0), { timeout: 60_000, interval: 200 }).toBeGreaterThan(5);
      const hours = await filesUnder(warehouse.warehouse, `${warehouse.root}/${topic}`);
      const commits = await readCommitLog(warehouse.warehouse, warehouse.root, name);
      await fixLoadFile(load);

      const refused = await runEtl(['replay', '--load', load, '--from', HOURS[0], '--to', '2026-11-29T13']);
      expect(refused.status).toBe(1);
      const message = messagesOf(refused);
      expect(message).toContain(`replay of load ${name} stopped before changing anything:`);
      expect(message).toMatch(new RegExp(`${topic}-0 \\[0, 5\\) \\(5 offsets, deleted by retention; fed 2026-11-29T1\\d`));
      expect(message).toContain('[ETL_REPLAY_OFFSETS_MISSING]');
      expectSameBytes(await filesUnder(warehouse.warehouse, `${warehouse.root}/${topic}`), hours, 'the hour folders');
      expect(await readCommitLog(warehouse.warehouse, warehouse.root, name)).toEqual(commits);
      expect(await filesUnder(warehouse.warehouse, `${warehouse.root}/_etl/${name}/replays`)).toEqual({});
      expect(await filesUnder(warehouse.warehouse, `${warehouse.root}/_etl/${name}/versions`)).toEqual({});
    },
    SLOW,
  );

  it(
    'takes the lease runs take (/etl/locks/<load> in ZooKeeper): while a run holds it, the replay stops with ETL_LOAD_BUSY and changes nothing',
    async () => {
      const { name, topic, warehouse } = fresh('local folder', 'busy');
      const { load, before } = await loadThreeHours(name, topic, warehouse, 2);
      await fixLoadFile(load);
      const zookeeper = `${zookeeperAddress().connectString}/replay-${process.pid}-${randomBytes(3).toString('hex')}`;
      const store = await ZooKeeperStore.connect(zookeeper, { logger: silent });
      try {
        const lease = await acquireLease(store, name, { attempt: 'scheduledrun', numberRuns: true });
        const busy = await runEtl(['replay', '--load', load, '--from', HOURS[0], '--to', HOURS[1], '--zookeeper', zookeeper]);
        expect(busy.status).toBe(1);
        expect(messagesOf(busy)).toContain(`load ${name} is being run by run`);
        expect(messagesOf(busy)).toContain('[ETL_LOAD_BUSY]');
        for (const hour of HOURS) expectSameBytes(await filesUnder(warehouse.warehouse, hourFolder(warehouse, topic, hour)), before[hour]!, hour);
        await lease.release();
        const done = await runEtl(['replay', '--load', load, '--from', HOURS[0], '--to', HOURS[1], '--zookeeper', zookeeper]);
        expect(done.status, done.stderr).toBe(0);
        expect(done.stdout).toMatch(new RegExp(`${topic}\\s+${HOURS[0]}\\s+1 → 2`));
      } finally {
        await store.close();
      }
    },
    SLOW,
  );

  it(
    'etl status --watch prints the status again every interval, replayed hours included, until interrupted',
    async () => {
      const { name, topic, warehouse } = fresh('local folder', 'watch');
      const { load } = await loadThreeHours(name, topic, warehouse, 2);
      await fixLoadFile(load);
      expect((await runEtl(['replay', '--load', load, '--from', HOURS[1], '--to', HOURS[2]])).status).toBe(0);

      const child = spawn(process.execPath, [fileURLToPath(new URL('../../../bin/tributary.js', import.meta.url)), 'etl', 'status', '--load', load, '--watch', '--interval', '1'], { stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
      const exited = new Promise<number | null>((resolve) => child.once('close', (status) => resolve(status)));
      await expect.poll(() => stdout.split('status at ').length - 1, { timeout: 120_000, interval: 200 }).toBeGreaterThanOrEqual(2);
      child.kill('SIGINT');
      expect(await exited).toBe(0);
      expect(stdout).toContain(`load ${name}: 3 commits`);
      expect(stdout).toContain(`${topic} ${HOURS[1]}  version 2 live,`);
      expect(stdout).not.toContain('\x1b[2J'); // not a terminal: frames one after another
    },
    SLOW,
  );
});

async function logStartOf(topic: string, partition: number): Promise<number> {
  const cluster = await ClusterClient.connect({ bootstrap: [env.broker.bootstrap], allowAutoTopicCreation: false });
  try {
    return Number(await new SimpleConsumer(cluster).listOffset(topic, partition, 'earliest'));
  } finally {
    cluster.close();
  }
}
