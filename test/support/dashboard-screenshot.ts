/**
 * Regenerates docs/dashboard.png: builds the dashboard world (test/support/dashboard-world.ts) on
 * the running test services, serves the dashboard in this process, and has headless Chromium take
 * the loads page. Run by hand after a change to the pages, then commit the picture:
 *
 *   npm run services -- start        (if the test services are not running)
 *   npx tsx test/support/dashboard-screenshot.ts [--out docs/dashboard.png] [--services .services/state.json]
 *
 * CI never runs this: it would rewrite a committed file.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { createLogger } from '../../src/common/logger.js';
import { startDashboard } from '../../src/dashboard/server.js';
import type { ServiceAddresses } from '../services/stack.js';
import { launchChromium, openPage, screenshotLoads } from './dashboard-browser.js';
import { buildDashboardWorld } from './dashboard-world.js';

const { values } = parseArgs({
  options: {
    out: { type: 'string', default: 'docs/dashboard.png' },
    services: { type: 'string', default: process.env['TRIBUTARY_TEST_SERVICES'] ?? '.services/state.json' },
  },
});
const services = JSON.parse(readFileSync(resolve(values.services), 'utf8')) as ServiceAddresses;
if (services.zookeeper === undefined || services.redis === undefined) throw new Error(`${values.services} names no ZooKeeper or no Redis; start the test services first (npm run services -- start)`);

const logger = createLogger({ name: 'dashboard-screenshot', level: 'warn' });
const world = await buildDashboardWorld({ zookeeper: services.zookeeper.connectString, redisUrl: services.redis.url, logger });
try {
  const dashboard = await startDashboard({
    host: '127.0.0.1',
    port: 0,
    redis: world.redisUrl,
    prefix: world.queuePrefix,
    loads: world.loadsDir,
    zookeeper: world.zookeeper,
    bootstrapServers: [world.bootstrap],
    registry: world.registryUrl,
    logger,
  });
  try {
    const browser = await launchChromium();
    try {
      await screenshotLoads(await openPage(browser), dashboard.url, resolve(values.out));
    } finally {
      await browser.close();
    }
  } finally {
    await dashboard.close();
  }
  process.stdout.write(`wrote ${resolve(values.out)}\n`);
} finally {
  await world.close();
}
