/**
 * `tributary scheduler` as a real process on the real Redis: it keeps the job schedulers of the
 * runs queue in step with a folder of load files as files are added, edited and deleted; an
 * invalid file is refused with its reason and changes nothing; SIGTERM stops it. And both
 * commands refuse bad flags with a precise message before touching anything.
 */
import { mkdtemp, rm, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { RunJobData } from '../../../jobs/src/job-data.js';
import { runTributary } from '../../support/cli.js';
import { redisAddress } from '../services.js';
import { events, openTestQueues, startSchedulerProcess, testPrefix, type TestQueues, type TributaryProcess } from './jobs-support.js';

const cleanups: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
}, 60_000);

function loadText(name: string, schedule?: string): string {
  return [
    `name: ${name}`,
    'source: { bootstrap: [127.0.0.1:9092] }',
    `topics: [${name}]`,
    'registry: http://127.0.0.1:8081',
    'warehouse: { url: warehouse, root: data }',
    'format: avro',
    'codec: deflate',
    ...(schedule === undefined ? [] : [`schedule: '${schedule}'`]),
    '',
  ].join('\n');
}

/** The schedulers in Redis: id → pattern and the file its jobs carry. */
async function schedulers(queues: TestQueues): Promise<Record<string, { pattern: string | undefined; tz: string | undefined; file: string | undefined }>> {
  const listed = await queues.queues.runs.getJobSchedulers();
  return Object.fromEntries(listed.map((scheduler) => [scheduler.key, { pattern: scheduler.pattern, tz: scheduler.tz, file: (scheduler.template?.data as RunJobData | undefined)?.loadFile }]));
}

async function eventually<T>(read: () => Promise<T>, expected: unknown): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const value = await read();
    try {
      expect(value).toEqual(expected);
      return;
    } catch (error) {
      if (Date.now() > deadline) throw error;
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

describe('tributary scheduler', () => {
  it(
    'adds, updates and removes job schedulers as load files come, change and go; refuses an invalid file and keeps its scheduler',
    async () => {
      const folder = await mkdtemp(join(tmpdir(), 'tributary-loads-'));
      cleanups.push(() => rm(folder, { recursive: true, force: true }));
      await writeFile(join(folder, 'views.yaml'), loadText('views', '5 * * * *'));
      await writeFile(join(folder, 'manual.yaml'), loadText('manual'));
      await writeFile(join(folder, 'broken.yaml'), loadText('broken', '5 * * * *').replace('format: avro', 'format: csv'));
      await writeFile(join(folder, 'notes.txt'), 'not a load file');
      const queues = openTestQueues(testPrefix());
      cleanups.push(() => queues.dispose());

      let scheduler: TributaryProcess | undefined = await startSchedulerProcess(queues.prefix, folder);
      cleanups.push(() => scheduler?.daemon.stop() ?? Promise.resolve());
      expect(scheduler.log()).toContain(`scheduler: 1 load scheduled, 0 removed, 1 file refused in ${folder}; queue tributary-runs (prefix ${queues.prefix})`);
      const [refused] = events(scheduler, 'load-refused');
      expect(refused).toMatchObject({ file: join(folder, 'broken.yaml'), reason: expect.stringContaining(`invalid configuration in load file ${join(folder, 'broken.yaml')}: format:`) as unknown });
      expect(await schedulers(queues)).toEqual({ views: { pattern: '5 * * * *', tz: 'UTC', file: join(folder, 'views.yaml') } });
      const [job] = await queues.queues.runs.getJobs(['delayed']);
      expect(job?.data).toEqual({ loadFile: join(folder, 'views.yaml'), loadText: loadText('views', '5 * * * *'), acceptGap: false, trigger: 'schedule' });

      await writeFile(join(folder, 'views.yaml'), loadText('views', '*/15 * * * *'));
      await writeFile(join(folder, 'clicks.yaml'), loadText('clicks', '0 3 * * *'));
      await eventually(() => schedulers(queues), {
        views: { pattern: '*/15 * * * *', tz: 'UTC', file: join(folder, 'views.yaml') },
        clicks: { pattern: '0 3 * * *', tz: 'UTC', file: join(folder, 'clicks.yaml') },
      });

      // Some passes (one a second) with both in step: none of them may write a scheduler again.
      await new Promise((resolve) => setTimeout(resolve, 3_000));

      // Deleted: its scheduler goes. Broken while edited: its scheduler stays as it was.
      await unlink(join(folder, 'views.yaml'));
      await writeFile(join(folder, 'clicks.yaml'), 'name: clicks\nformat: [');
      await eventually(() => schedulers(queues), { clicks: { pattern: '0 3 * * *', tz: 'UTC', file: join(folder, 'clicks.yaml') } });
      await eventually(async () => events(scheduler!, 'load-refused').some((line) => line['file'] === join(folder, 'clicks.yaml')), true);
      expect(events(scheduler, 'scheduler-removed')).toEqual([expect.objectContaining({ load: 'views', why: `no load file declares load views any more (it was ${join(folder, 'views.yaml')})` })]);
      // A pass every second, yet a scheduler in step is never written again.
      expect(events(scheduler, 'scheduler-upserted').map((line) => `${String(line['load'])}: ${String(line['why'])}`).sort()).toEqual([
        'clicks: new load',
        'views: new load',
        "views: schedule '5 * * * *' → '*/15 * * * *'",
      ]);

      expect(await scheduler.terminate()).toBe(0);
      scheduler = undefined;
      // Stopped means stopped: a file added now is not scheduled.
      await writeFile(join(folder, 'late.yaml'), loadText('late', '5 * * * *'));
      await new Promise((resolve) => setTimeout(resolve, 2_000));
      expect(Object.keys(await schedulers(queues))).toEqual(['clicks']);
    },
    180_000,
  );

  it('refuses a folder that does not exist and bad flags, saying what to pass, and starts nothing', async () => {
    const redis = redisAddress().url;
    const missing = await runTributary(['scheduler', '--redis', redis, '--loads', '/nonexistent/loads']);
    expect(missing.status).toBe(1);
    expect(missing.stderr).toContain('cannot list the load files in /nonexistent/loads: ENOENT. Pass --loads with the folder of the load YAML files (e.g. jobs/) [CONFIG_INVALID]');

    const notRedis = await runTributary(['worker', '--redis', 'http://127.0.0.1:6379']);
    expect(notRedis.status).toBe(1);
    expect(notRedis.stderr).toContain('invalid configuration in --redis: (top level): expected a Redis URL, e.g. redis://127.0.0.1:6379 (rediss:// for TLS)');

    const flags = await runTributary(['worker', '--redis', redis, '--concurrency', '0', '--grace-ms', 'soon']);
    expect(flags.status).toBe(1);
    expect(flags.stderr).toContain('invalid configuration in the command line: concurrency: ');
    expect(flags.stderr).toContain('graceMs: ');
  }, 120_000);
});
