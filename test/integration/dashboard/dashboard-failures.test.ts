/**
 * Every source of the dashboard down or broken at once — an HDFS NameNode nobody listens on, a
 * load file that is not YAML, ZooKeeper, the audit cluster and Redis unreachable — and one load
 * that is fine: each page still renders in Chromium, each failure fills its own panel with the
 * source and the error code, and the healthy load is shown as usual.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../../src/common/logger.js';
import type { LoadsView } from '../../../src/dashboard/loads-view.js';
import type { Panel } from '../../../src/dashboard/panel.js';
import { startDashboard, type RunningDashboard } from '../../../src/dashboard/server.js';
import { freePort } from '../../services/network.js';
import { launchChromium, openPage } from '../../support/dashboard-browser.js';

let folder: string;
let dashboard: RunningDashboard;
let browser: Browser;
let page: Page;
/** Ports nothing listens on (free a moment ago). */
let dead: { hdfs: number; zookeeper: number; broker: number; registry: number; redis: number };

function loadFile(name: string, warehouse: string): string {
  return [`name: ${name}`, 'source: { bootstrap: [127.0.0.1:9092] }', 'topics: [page-views]', 'registry: http://127.0.0.1:8081', `warehouse: { url: '${warehouse}', root: data }`, 'format: avro', 'codec: deflate', "schedule: '5 * * * *'", ''].join('\n');
}

beforeAll(async () => {
  folder = await mkdtemp(join(tmpdir(), 'dashboard-failures-'));
  dead = { hdfs: await freePort(), zookeeper: await freePort(), broker: await freePort(), registry: await freePort(), redis: await freePort() };
  const loads = join(folder, 'loads');
  await mkdir(loads);
  await writeFile(join(loads, 'healthy.yaml'), loadFile('healthy', join(folder, 'warehouse')));
  await writeFile(join(loads, 'hdfs-down.yaml'), loadFile('hdfs-down', `webhdfs://127.0.0.1:${dead.hdfs}/?user=etl`));
  await writeFile(join(loads, 'broken.yaml'), 'name: broken\nformat: [avro\n');
  dashboard = await startDashboard({
    host: '127.0.0.1',
    port: 0,
    redis: `redis://127.0.0.1:${dead.redis}`,
    loads,
    zookeeper: `127.0.0.1:${dead.zookeeper}`,
    bootstrapServers: [`127.0.0.1:${dead.broker}`],
    registry: `http://127.0.0.1:${dead.registry}`,
    sourceTimeoutMs: 45_000,
    logger: createLogger({ name: 'dashboard', level: 'silent' }),
  });
  browser = await launchChromium();
  page = await openPage(browser);
}, 300_000);

afterAll(async () => {
  await browser?.close();
  await dashboard?.close();
  if (folder !== undefined) await rm(folder, { recursive: true, force: true });
}, 60_000);

const SLOW = 180_000;

describe('the dashboard with its sources down', () => {
  it(
    'renders the loads page: the healthy load as usual, each failure on its own panel',
    async () => {
      const response = await page.goto(`${dashboard.url}/`);
      expect(response?.status()).toBe(200);
      expect(await page.locator('#load-healthy').textContent()).toContain('no commits yet');
      expect((await page.locator('#loads tr[data-load="healthy"] td').allTextContents()).slice(5)).toEqual(['0', '0', 'never']);

      const down = page.locator('#load-hdfs-down .error').first();
      expect(await down.getAttribute('data-error')).toBe('WAREHOUSE_UNAVAILABLE');
      expect(await down.textContent()).toContain(`Cannot read the warehouse of load hdfs-down: WAREHOUSE_UNAVAILABLE`);
      expect(await down.textContent()).toContain(`127.0.0.1:${dead.hdfs}`);
      expect(await page.locator('#loads tr[data-load="hdfs-down"]').textContent()).toContain('warehouse unreadable (WAREHOUSE_UNAVAILABLE)');

      const broken = page.locator(`#loads .error[data-problem="${join(folder, 'loads', 'broken.yaml')}"]`);
      expect(await broken.textContent()).toContain('is not valid YAML');

      // The healthy load's completeness needs the audit cluster, which is down: said on its topic.
      expect(await page.locator('#load-healthy .topic-hours .error').count()).toBe(1);
      expect(await page.locator('#queues .error').textContent()).toContain(`Cannot read Redis 127.0.0.1:${dead.redis}/0 (prefix bull)`);
    },
    SLOW,
  );

  it(
    'answers the JSON with the same errors per panel',
    async () => {
      const response = await fetch(`${dashboard.url}/api/loads`);
      expect(response.status).toBe(200);
      const view = (await response.json()) as Panel<LoadsView>;
      if (!view.ok) throw new Error(view.error.message);
      expect(view.data.loads.map((load) => [load.name, load.runs.ok ? 'ok' : load.runs.error.code])).toEqual([
        ['hdfs-down', 'WAREHOUSE_UNAVAILABLE'],
        ['healthy', 'ok'],
      ]);
      expect(view.data.problems.map((problem) => problem.code)).toEqual(['CONFIG_INVALID']);
    },
    SLOW,
  );

  it(
    'renders the audit and consumer-group pages with their errors',
    async () => {
      expect((await page.goto(`${dashboard.url}/audit`))?.status()).toBe(200);
      const audit = page.locator('#audit-page-views .error');
      expect(await audit.textContent()).toContain(`Cannot read the _audit topic of 127.0.0.1:${dead.broker}`);

      expect((await page.goto(`${dashboard.url}/groups`))?.status()).toBe(200);
      const groups = page.locator('#groups .error');
      expect(await groups.textContent()).toContain(`Cannot read ZooKeeper 127.0.0.1:${dead.zookeeper}`);
    },
    SLOW,
  );

  it(
    'still serves Bull Board, with no queues to show',
    async () => {
      expect((await page.goto(`${dashboard.url}/queues`))?.status()).toBe(200);
      await page.getByText('Tributary queues').first().waitFor();
    },
    SLOW,
  );
});
