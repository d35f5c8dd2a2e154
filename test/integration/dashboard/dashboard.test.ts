/**
 * `tributary dashboard` as a user runs it (a real process), looked at in headless Chromium, over
 * real data (test/support/dashboard-world.ts): two loads with three commits in local warehouse
 * folders made by the real loader, PRODUCER and LOADER audit counts in a real `_audit` topic,
 * consumer groups in the real ZooKeeper with a broker registered there, and BullMQ queues with
 * jobs in the real Redis. The pages must show the numbers the world was built with; the JSON
 * behind them must hold the same.
 */
import { readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../../src/common/logger.js';
import type { AuditView } from '../../../src/dashboard/audit-view.js';
import type { GroupsView } from '../../../src/dashboard/groups-view.js';
import type { LoadsView } from '../../../src/dashboard/loads-view.js';
import type { Panel } from '../../../src/dashboard/panel.js';
import type { QueuesView } from '../../../src/dashboard/queues-view.js';
import { DEMO_TOPIC } from '../../../src/demo/demo.js';
import { freePort } from '../../services/network.js';
import { startDaemon, waitUntil, type Daemon } from '../../services/process.js';
import { openRun } from '../../services/run-dir.js';
import { launchChromium, openPage, screenshotLoads } from '../../support/dashboard-browser.js';
import {
  AVRO_LOAD,
  buildDashboardWorld,
  CAUGHT_UP_GROUP,
  LAGGING_GROUP,
  LAGGING_OFFSET,
  ONLINE_PARTITIONS,
  ONLINE_RECORDS_PER_PARTITION,
  PARQUET_LOAD,
  WORLD_QUEUES,
  type DashboardWorld,
} from '../../support/dashboard-world.js';
import { redisAddress, services, zookeeperAddress } from '../services.js';

const silent = createLogger({ name: 'dashboard-test', level: 'silent' });
let world: DashboardWorld;
let dashboard: Daemon;
let url: string;
let browser: Browser;
let page: Page;

beforeAll(async () => {
  world = await buildDashboardWorld({ zookeeper: zookeeperAddress().connectString, redisUrl: redisAddress().url, logger: silent });
  const port = await freePort();
  url = `http://127.0.0.1:${port}`;
  const run = openRun(services().runDir);
  dashboard = startDaemon({
    run,
    name: `dashboard-${port}`,
    command: process.execPath,
    args: [
      join(import.meta.dirname, '..', '..', '..', 'bin', 'tributary.js'),
      'dashboard',
      '--listen', `127.0.0.1:${port}`,
      '--redis', world.redisUrl,
      '--prefix', world.queuePrefix,
      '--loads', world.loadsDir,
      '--zookeeper', world.zookeeper,
      '--bootstrap-server', world.bootstrap,
      '--registry', world.registryUrl,
      '--log-level', 'warn',
    ],
    logFile: join(run.dir, `dashboard-${port}.log`),
  });
  await waitUntil(async () => (await fetch(`${url}/api/health`).catch(() => undefined))?.ok === true, { what: `the dashboard on port ${port}`, timeoutMs: 120_000, daemons: [dashboard] });
  browser = await launchChromium();
  page = await openPage(browser);
}, 600_000);

afterAll(async () => {
  await browser?.close();
  await dashboard?.stop();
  await world?.close();
}, 120_000);

async function api<T>(path: string): Promise<T> {
  const response = await fetch(`${url}${path}`);
  expect(response.status, path).toBe(200);
  return (await response.json()) as T;
}

function ok<T>(panel: Panel<T>): T {
  if (!panel.ok) throw new Error(`panel failed: ${panel.error.code} ${panel.error.message}`);
  return panel.data;
}

/** The cell texts of each row (through locators: the test's TypeScript has no DOM types). */
async function cellTexts(rows: Locator): Promise<string[][]> {
  const texts: string[][] = [];
  for (const row of await rows.all()) texts.push(await row.locator('td').allTextContents());
  return texts;
}

const SLOW = 180_000;

describe('tributary dashboard', () => {
  it(
    'the loads page lists both loads with schedule and warehouse, their last runs, and records per hour at 100% against the producers (DOM)',
    async () => {
      await page.goto(`${url}/`);
      const loadRow = page.locator(`#loads tr[data-load="${AVRO_LOAD}"] td`);
      const cells = (await loadRow.allTextContents()).map((text) => text.trim());
      const total = world.expected.avroCommits.reduce((sum, commit) => sum + commit.records, 0);
      expect(cells.slice(0, 2)).toEqual([AVRO_LOAD, '5 * * * *']);
      expect(cells[2]).toBe(DEMO_TOPIC);
      expect(cells[3]).toContain('/demo/warehouse');
      expect(cells.slice(4, 7)).toEqual(['avro/deflate', '2', String(total)]);
      expect(await page.locator(`#loads tr[data-load="${PARQUET_LOAD}"] td`).allTextContents()).toContain('parquet/snappy');

      // Last runs, newest first: seq and records of each commit.
      const runs = page.locator(`#load-${AVRO_LOAD} table.runs tbody tr`);
      const shown = (await cellTexts(runs)).map((cells) => [cells[0], cells[1], cells[4]]);
      expect(shown).toEqual([...world.expected.avroCommits].reverse().map((commit) => [String(commit.seq), 'published', String(commit.records)]));

      // Records per event hour, for both loads of the topic: the table and a bar per hour.
      for (const load of [AVRO_LOAD, PARQUET_LOAD]) {
        const topic = page.locator(`#load-${load} .topic-hours[data-topic="${DEMO_TOPIC}"]`);
        const rows = await cellTexts(topic.locator('table.hours tbody tr'));
        expect(rows, load).toEqual(Object.entries(world.expected.perHour).map(([hour, count]) => [hour, String(count), String(count), '100.00%', 'OK']));
        expect(await topic.locator('svg.hour-chart g[data-hour]').count()).toBe(3);
        expect(await topic.locator('svg.hour-chart title').first().textContent()).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:00Z: \d+ loaded of \d+ produced \(100\.00%\), OK$/);
      }

      // The queues panel: counts per state, as BullMQ keeps them.
      const runsQueue = await page.locator(`#queues tr[data-queue="${WORLD_QUEUES.runs}"] td`).allTextContents();
      expect(runsQueue).toEqual([WORLD_QUEUES.runs, '0', String(world.expected.runsQueue.waiting), '0', '0', '0', String(world.expected.runsQueue.completed), String(world.expected.runsQueue.failed)]);

      // The picture: written to a temporary file (docs/dashboard.png is regenerated by hand, never by CI).
      const shot = join(tmpdir(), `dashboard-${process.pid}.png`);
      try {
        await screenshotLoads(page, url, shot);
        const png = await readFile(shot);
        expect(png.subarray(0, 8).toString('hex')).toBe('89504e470d0a1a0a');
        expect(png.length).toBeGreaterThan(20_000);
      } finally {
        await rm(shot, { force: true });
      }
    },
    SLOW,
  );

  it(
    'the JSON behind the loads page holds the same commits and hours',
    async () => {
      const view = ok(await api<Panel<LoadsView>>('/api/loads'));
      expect(view.directory).toBe(world.loadsDir);
      expect(view.problems).toEqual([]);
      expect(view.loads.map((load) => [load.name, load.schedule, load.format, load.codec])).toEqual([
        [PARQUET_LOAD, '20 * * * *', 'parquet', 'snappy'],
        [AVRO_LOAD, '5 * * * *', 'avro', 'deflate'],
      ]);
      const avro = view.loads.find((load) => load.name === AVRO_LOAD);
      const runs = ok(avro!.runs);
      expect(runs.commits).toBe(2);
      expect(runs.pending).toBe(0);
      expect(runs.latest.map((commit) => [commit.seq, commit.records, commit.state])).toEqual([...world.expected.avroCommits].reverse().map((commit) => [commit.seq, commit.records, 'published']));
      const [topic] = ok(avro!.hours);
      expect(topic?.audit).toEqual({ state: 'ok' });
      expect(Object.fromEntries(topic!.rows.map((row) => [row.hour, [row.loaded, row.produced, row.status]]))).toEqual(
        Object.fromEntries(Object.entries(world.expected.perHour).map(([hour, count]) => [hour, [count, count, 'OK']])),
      );
      const parquet = view.loads.find((load) => load.name === PARQUET_LOAD);
      expect(ok(parquet!.runs).records).toBe(world.expected.parquetRecords);

      const queues = ok(await api<Panel<QueuesView>>('/api/queues'));
      expect(queues.prefix).toBe(world.queuePrefix);
      expect(queues.queues.map((queue) => [queue.name, queue.counts.completed, queue.counts.failed, queue.counts.waiting])).toEqual([
        [WORLD_QUEUES.runs, world.expected.runsQueue.completed, world.expected.runsQueue.failed, world.expected.runsQueue.waiting],
        [WORLD_QUEUES.tasks, 0, 0, world.expected.tasksWaiting],
      ]);
    },
    SLOW,
  );

  it(
    'the audit page shows every window of the topic complete at the LOADER tier',
    async () => {
      const from = new Date(world.hours.from).toISOString();
      const to = new Date(world.hours.to).toISOString();
      await page.goto(`${url}/audit?topic=${DEMO_TOPIC}&from=${from}&to=${to}`);
      const rows = await cellTexts(page.locator(`#audit-${DEMO_TOPIC} tr[data-tier="LOADER"]`));
      // 3 hours of 10-minute windows.
      expect(rows).toHaveLength(18);
      for (const row of rows) expect(row.slice(3).concat([row[2] === row[4] ? 'same' : 'differs'])).toEqual(['LOADER', row[2], '0', '100.00%', 'OK', 'same']);

      const view = ok(await api<Panel<AuditView>>(`/api/audit?topic=${DEMO_TOPIC}&from=${from}&to=${to}`));
      const report = ok(view.topics[0]!.report);
      const produced = report.windows.reduce((sum, window) => sum + window.produced, 0);
      expect(produced).toBe(Object.values(world.expected.perHour).reduce((sum, count) => sum + count, 0));
      expect(report.windows.every((window) => window.tiers.some((tier) => tier.tier === 'LOADER' && tier.status === 'OK' && tier.received === window.produced))).toBe(true);

      // Without ?topic= the load files' topics are reported; a bad range is refused with 400.
      expect(ok(await api<Panel<AuditView>>(`/api/audit?from=${from}&to=${to}`)).topics.map((topic) => topic.topic)).toEqual([DEMO_TOPIC]);
      const refused = await fetch(`${url}/api/audit?from=${to}&to=${from}`);
      expect(refused.status).toBe(400);
      expect(((await refused.json()) as Panel<AuditView>).ok).toBe(false);
    },
    SLOW,
  );

  it(
    'the consumer-group page shows the lag of each group and partition',
    async () => {
      await page.goto(`${url}/groups`);
      const behind = ONLINE_RECORDS_PER_PARTITION - LAGGING_OFFSET;
      expect(await page.locator(`#group-${LAGGING_GROUP} [data-total-lag]`).textContent()).toBe(String(ONLINE_PARTITIONS * behind));
      expect(await page.locator(`#group-${CAUGHT_UP_GROUP} [data-total-lag]`).textContent()).toBe('0');
      const rows = await cellTexts(page.locator(`#group-${LAGGING_GROUP} table.lag tbody tr`));
      expect(rows).toEqual(
        Array.from({ length: ONLINE_PARTITIONS }, (_, partition) => [DEMO_TOPIC, String(partition), String(LAGGING_OFFSET), String(ONLINE_RECORDS_PER_PARTITION), String(behind), '—']),
      );
      const view = ok(await api<Panel<GroupsView>>('/api/groups'));
      // Groups by name: page-view-counter, then sessionizer.
      expect(view.groups.map((group) => [group.group, group.totalLag, group.members])).toEqual([
        [LAGGING_GROUP, String(ONLINE_PARTITIONS * behind), []],
        [CAUGHT_UP_GROUP, '0', []],
      ]);
    },
    SLOW,
  );

  it(
    'Bull Board at /queues loads and lists the queues with their jobs',
    async () => {
      await page.goto(`${url}/queues`);
      await page.getByText(WORLD_QUEUES.runs, { exact: true }).first().waitFor();
      await page.getByText(WORLD_QUEUES.tasks, { exact: true }).first().waitFor();
      // Its own API, which its page polls: the same counts BullMQ keeps.
      const board = await api<{ queues: { name: string; counts: Record<string, number> }[] }>('/queues/api/queues');
      const runs = board.queues.find((queue) => queue.name === WORLD_QUEUES.runs);
      expect(runs?.counts).toMatchObject({ completed: world.expected.runsQueue.completed, failed: world.expected.runsQueue.failed, waiting: world.expected.runsQueue.waiting });

      // A queue's page lists its failed job with the reason.
      await page.goto(`${url}/queues/queue/${WORLD_QUEUES.runs}?status=failed`);
      await page.getByText('warehouse.url is empty').first().waitFor();
    },
    SLOW,
  );

  it(
    'stops cleanly on SIGTERM',
    async () => {
      await dashboard.stop();
      expect(await dashboard.exited).toBe(0);
    },
    SLOW,
  );
});
