/** planSchedulerSync: which job schedulers to add, change, remove or leave, from the load files and Redis. */
import { describe, expect, it } from 'vitest';
import { parseLoadFile } from '../../../src/etl/load-file.js';
import type { LoadFileEntry } from '../../../jobs/src/load-directory.js';
import { JOB_OPTIONS, SCHEDULE_TIMEZONE } from '../../../jobs/src/queues.js';
import { MAINTENANCE_SCHEDULES, planSchedulerSync, RUN_SCHEDULES, type ExistingScheduler } from '../../../jobs/src/scheduler-sync.js';

function loadText(name: string, schedule?: string): string {
  return [
    `name: ${name}`,
    'source: { bootstrap: [127.0.0.1:9092] }',
    `topics: [${name}-topic]`,
    'registry: http://127.0.0.1:8081',
    'warehouse: { url: /tmp/warehouse, root: data }',
    'format: avro',
    'codec: deflate',
    ...(schedule === undefined ? [] : [`schedule: '${schedule}'`]),
  ].join('\n');
}

function entry(file: string, name: string, schedule?: string): LoadFileEntry {
  const text = loadText(name, schedule);
  return { file, ok: true, load: parseLoadFile(text, file), text };
}

/** What Redis holds after the sync upserted this entry. */
function existing(from: LoadFileEntry, overrides: Partial<ExistingScheduler> = {}): ExistingScheduler {
  if (!from.ok) throw new Error('not a valid entry');
  return {
    key: from.load.name,
    pattern: from.load.schedule,
    tz: SCHEDULE_TIMEZONE,
    // Keys of the backoff in the order Redis gives them back, not the order they were written in.
    template: { data: { loadFile: from.file, loadText: from.text, acceptGap: false, trigger: 'schedule' }, opts: { attempts: JOB_OPTIONS.run.attempts, backoff: { delay: JOB_OPTIONS.run.backoff.delay, type: JOB_OPTIONS.run.backoff.type } } },
    ...overrides,
  };
}

describe('planSchedulerSync', () => {
  it('adds a scheduler for each scheduled load, with the file and its text as the job data', () => {
    const views = entry('/jobs/views.yaml', 'views', '5 * * * *');
    const plan = planSchedulerSync([views, entry('/jobs/manual.yaml', 'manual')], []);
    expect(plan.upserts).toEqual([
      { id: 'views', pattern: '5 * * * *', data: { loadFile: '/jobs/views.yaml', loadText: loadText('views', '5 * * * *'), acceptGap: false, trigger: 'schedule' }, reason: 'new load' },
    ]);
    expect(plan).toMatchObject({ removals: [], refusals: [], unchanged: [], held: [] });
  });

  it('leaves schedulers in step alone and upserts those whose schedule or file changed, saying what changed', () => {
    const views = entry('/jobs/views.yaml', 'views', '5 * * * *');
    const clicks = entry('/jobs/clicks.yaml', 'clicks', '0 * * * *');
    const edited = entry('/jobs/orders.yaml', 'orders', '0 3 * * *');
    const plan = planSchedulerSync(
      [views, entry('/jobs/clicks.yaml', 'clicks', '*/10 * * * *'), edited],
      [existing(views), existing(clicks), existing(edited, { template: { data: { loadFile: '/jobs/orders.yaml', loadText: 'older text', acceptGap: false, trigger: 'schedule' }, opts: { attempts: 5, backoff: JOB_OPTIONS.run.backoff } } })],
    );
    expect(plan.unchanged).toEqual(['views']);
    expect(plan.upserts.map((upsert) => [upsert.id, upsert.pattern, upsert.reason])).toEqual([
      ['clicks', '*/10 * * * *', "schedule '0 * * * *' → '*/10 * * * *'"],
      ['orders', '0 3 * * *', 'load file edited'],
    ]);
  });

  it('removes the scheduler of a deleted load file, and of a load that has no schedule any more', () => {
    const gone = entry('/jobs/gone.yaml', 'gone', '5 * * * *');
    const paused = entry('/jobs/paused.yaml', 'paused', '5 * * * *');
    const plan = planSchedulerSync([entry('/jobs/paused.yaml', 'paused')], [existing(gone), existing(paused)]);
    expect(plan.removals).toEqual([
      { id: 'gone', reason: 'no load file declares load gone any more (it was /jobs/gone.yaml)' },
      { id: 'paused', reason: 'load paused has no schedule any more' },
    ]);
    expect(plan.upserts).toEqual([]);
  });

  it('refuses an invalid file with its reason and keeps the scheduler it had as it is', () => {
    const views = entry('/jobs/views.yaml', 'views', '5 * * * *');
    const broken: LoadFileEntry = { file: '/jobs/views.yaml', ok: false, message: 'invalid configuration in load file /jobs/views.yaml: format: …' };
    const plan = planSchedulerSync([broken], [existing(views)]);
    expect(plan.refusals).toEqual([{ file: '/jobs/views.yaml', message: broken.message }]);
    expect(plan.held).toEqual(['views']);
    expect(plan).toMatchObject({ upserts: [], removals: [] });
  });

  it('refuses a load name two files declare, naming both, and changes nothing about that load', () => {
    const first = entry('/jobs/a.yaml', 'views', '5 * * * *');
    const plan = planSchedulerSync([first, entry('/jobs/b.yaml', 'views', '0 * * * *')], [existing(first)]);
    expect(plan.refusals.map((refusal) => refusal.file)).toEqual(['/jobs/a.yaml', '/jobs/b.yaml']);
    expect(plan.refusals[0]?.message).toBe('load views is declared by /jobs/a.yaml and /jobs/b.yaml; a load name must be unique. Rename one of the loads; until then its scheduler stays as it is');
    expect(plan).toMatchObject({ upserts: [], removals: [], held: ['views'] });
  });

  it('upserts a scheduler written with other retry options or another time zone', () => {
    const views = entry('/jobs/views.yaml', 'views', '5 * * * *');
    const plan = planSchedulerSync([views], [existing(views, { tz: undefined, template: { ...existing(views).template, opts: { attempts: 1 } } })]);
    expect(plan.upserts.map((upsert) => upsert.reason)).toEqual([`time zone (local) → ${SCHEDULE_TIMEZONE}, retry options`]);
  });
});

describe('planSchedulerSync for the maintenance queue', () => {
  const icebergText = (name: string, maintenance: string | undefined): string =>
    [
      `name: ${name}`,
      'source: { bootstrap: [127.0.0.1:9092] }',
      `topics: [${name}-topic]`,
      'registry: http://127.0.0.1:8081',
      'warehouse: { url: /tmp/warehouse, root: data }',
      'format: iceberg',
      'codec: zstd',
      "schedule: '5 * * * *'",
      ...(maintenance === undefined ? [] : ['iceberg:', '  maintenance:', `    schedule: '${maintenance}'`]),
    ].join('\n');
  const icebergEntry = (name: string, maintenance: string | undefined): LoadFileEntry => {
    const text = icebergText(name, maintenance);
    return { file: `/jobs/${name}.yaml`, ok: true, load: parseLoadFile(text, `/jobs/${name}.yaml`), text };
  };

  it('follows iceberg.maintenance.schedule: a scheduler per load that has one, carrying the file; removed when the section goes', () => {
    const kept = icebergEntry('tables', '30 2 * * *');
    const plan = planSchedulerSync([kept, icebergEntry('plain', undefined)], [], MAINTENANCE_SCHEDULES);
    expect(plan.upserts).toEqual([{ id: 'tables', pattern: '30 2 * * *', data: { loadFile: '/jobs/tables.yaml', loadText: icebergText('tables', '30 2 * * *') }, reason: 'new load' }]);

    const inRedis: ExistingScheduler = {
      key: 'tables',
      pattern: '30 2 * * *',
      tz: SCHEDULE_TIMEZONE,
      template: { data: { loadFile: '/jobs/tables.yaml', loadText: icebergText('tables', '30 2 * * *') }, opts: { attempts: JOB_OPTIONS.maintain.attempts, backoff: { delay: JOB_OPTIONS.maintain.backoff.delay, type: JOB_OPTIONS.maintain.backoff.type } } },
    };
    expect(planSchedulerSync([kept], [inRedis], MAINTENANCE_SCHEDULES).unchanged).toEqual(['tables']);
    expect(planSchedulerSync([icebergEntry('tables', undefined)], [inRedis], MAINTENANCE_SCHEDULES).removals).toEqual([{ id: 'tables', reason: 'load tables has no iceberg.maintenance.schedule any more' }]);
    // The runs queue's plan of the same files is unaffected by the section.
    expect(planSchedulerSync([kept], [], RUN_SCHEDULES).upserts.map((upsert) => upsert.pattern)).toEqual(['5 * * * *']);
  });
});
