/**
 * What it takes to bring the job schedulers of the runs queue in step with the load files: a pure
 * decision, so it can be tested without Redis. One scheduler per load with a `schedule`, named
 * after the load, whose job template carries the load file's text.
 *
 * - a new load, or a load whose schedule or file changed: upsert its scheduler;
 * - a scheduler whose load is gone (file deleted, or no schedule any more): remove it;
 * - a file that is not a valid load file, or a load name that two files declare: refuse it with
 *   the reason and change nothing about it; the scheduler of a file that cannot be read now (being
 *   edited, say) is kept as it is rather than removed.
 *
 * The maintenance queue's schedulers follow the same rules, from `iceberg.maintenance.schedule`
 * (MAINTENANCE_SCHEDULES).
 */
import type { LoadDefinition } from '../../src/etl/load-file.js';
import type { MaintainJobData, RunJobData } from './job-data.js';
import type { LoadFileEntry } from './load-directory.js';
import { JOB_OPTIONS, SCHEDULE_TIMEZONE } from './queues.js';

/** Which schedule of a load file a queue's schedulers follow, and what their jobs carry. */
export interface ScheduleKind {
  /** The load file's field, for messages. */
  readonly field: string;
  scheduleOf(load: LoadDefinition): string | undefined;
  dataOf(entry: { readonly file: string; readonly text: string }): RunJobData | MaintainJobData;
  readonly options: { readonly attempts: number; readonly backoff: { readonly type: string; readonly delay: number } };
}

export const RUN_SCHEDULES: ScheduleKind = {
  field: 'schedule',
  scheduleOf: (load) => load.schedule,
  dataOf: (entry) => ({ loadFile: entry.file, loadText: entry.text, acceptGap: false, trigger: 'schedule' }),
  options: JOB_OPTIONS.run,
};

export const MAINTENANCE_SCHEDULES: ScheduleKind = {
  field: 'iceberg.maintenance.schedule',
  scheduleOf: (load) => load.iceberg?.maintenance?.schedule,
  dataOf: (entry) => ({ loadFile: entry.file, loadText: entry.text }),
  options: JOB_OPTIONS.maintain,
};

/** A scheduler as BullMQ lists it (getJobSchedulers). */
export interface ExistingScheduler {
  readonly key: string;
  readonly pattern?: string | undefined;
  readonly tz?: string | undefined;
  readonly template?: { readonly data?: unknown; readonly opts?: { readonly attempts?: number | undefined; readonly backoff?: unknown } | undefined } | undefined;
}

export interface SchedulerUpsert {
  readonly id: string;
  readonly pattern: string;
  readonly data: RunJobData | MaintainJobData;
  readonly reason: string;
}

export interface SchedulerSyncPlan {
  readonly upserts: readonly SchedulerUpsert[];
  readonly removals: readonly { readonly id: string; readonly reason: string }[];
  readonly refusals: readonly { readonly file: string; readonly message: string }[];
  /** Schedulers already in step. */
  readonly unchanged: readonly string[];
  /** Schedulers left as they are because their file or name was refused. */
  readonly held: readonly string[];
}

function templateFile(scheduler: ExistingScheduler): string | undefined {
  const data = scheduler.template?.data as Partial<RunJobData> | undefined;
  return typeof data?.loadFile === 'string' ? data.loadFile : undefined;
}

function differences(scheduler: ExistingScheduler, wanted: SchedulerUpsert, kind: ScheduleKind): string[] {
  const data = (scheduler.template?.data ?? {}) as Partial<RunJobData>;
  const wantedData = wanted.data as Partial<RunJobData>;
  const opts = scheduler.template?.opts;
  const changed: string[] = [];
  if (scheduler.pattern !== wanted.pattern) changed.push(`schedule '${scheduler.pattern ?? '(none)'}' → '${wanted.pattern}'`);
  if (scheduler.tz !== SCHEDULE_TIMEZONE) changed.push(`time zone ${scheduler.tz ?? '(local)'} → ${SCHEDULE_TIMEZONE}`);
  if (data.loadFile !== wanted.data.loadFile) changed.push(`file ${data.loadFile ?? '(none)'} → ${wanted.data.loadFile}`);
  // A new schedule is an edit of the file too; say so only when the edit was something else.
  else if (data.loadText !== wanted.data.loadText && scheduler.pattern === wanted.pattern) changed.push('load file edited');
  if (data.trigger !== wantedData.trigger || data.acceptGap !== wantedData.acceptGap) changed.push('run options');
  const backoff = opts?.backoff as { type?: unknown; delay?: unknown } | undefined;
  // Compared field by field: Redis gives the backoff back with its keys in another order.
  if (opts?.attempts !== kind.options.attempts || backoff?.type !== kind.options.backoff.type || backoff.delay !== kind.options.backoff.delay) changed.push('retry options');
  return changed;
}

export function planSchedulerSync(entries: readonly LoadFileEntry[], existing: readonly ExistingScheduler[], kind: ScheduleKind = RUN_SCHEDULES): SchedulerSyncPlan {
  const refusals: { file: string; message: string }[] = [];
  const heldFiles = new Set<string>();
  const heldNames = new Set<string>();
  const byName = new Map<string, Extract<LoadFileEntry, { ok: true }>[]>();
  for (const entry of entries) {
    if (!entry.ok) {
      refusals.push({ file: entry.file, message: entry.message });
      heldFiles.add(entry.file);
      continue;
    }
    byName.set(entry.load.name, [...(byName.get(entry.load.name) ?? []), entry]);
  }
  const wanted = new Map<string, SchedulerUpsert>();
  const unscheduled = new Set<string>();
  for (const [name, files] of byName) {
    if (files.length > 1) {
      const list = files.map((entry) => entry.file).join(' and ');
      for (const entry of files) refusals.push({ file: entry.file, message: `load ${name} is declared by ${list}; a load name must be unique. Rename one of the loads; until then its scheduler stays as it is` });
      heldNames.add(name);
      continue;
    }
    const [entry] = files;
    if (entry === undefined) continue;
    const pattern = kind.scheduleOf(entry.load);
    if (pattern === undefined) {
      unscheduled.add(name);
      continue;
    }
    wanted.set(name, { id: name, pattern, data: kind.dataOf(entry), reason: 'new load' });
  }

  const upserts: SchedulerUpsert[] = [];
  const removals: { id: string; reason: string }[] = [];
  const unchanged: string[] = [];
  const held: string[] = [];
  const present = new Map(existing.map((scheduler) => [scheduler.key, scheduler]));
  for (const scheduler of existing) {
    const id = scheduler.key;
    if (wanted.has(id)) continue;
    const file = templateFile(scheduler);
    if (heldNames.has(id) || (file !== undefined && heldFiles.has(file))) held.push(id);
    else if (unscheduled.has(id)) removals.push({ id, reason: `load ${id} has no ${kind.field} any more` });
    else removals.push({ id, reason: `no load file declares load ${id} any more${file === undefined ? '' : ` (it was ${file})`}` });
  }
  for (const upsert of wanted.values()) {
    const current = present.get(upsert.id);
    if (current === undefined) {
      upserts.push(upsert);
      continue;
    }
    const changed = differences(current, upsert, kind);
    if (changed.length === 0) unchanged.push(upsert.id);
    else upserts.push({ ...upsert, reason: changed.join(', ') });
  }
  return { upserts, removals, refusals, unchanged, held };
}
