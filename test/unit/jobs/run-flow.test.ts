/** A planned run as a BullMQ flow: the commit as parent, one task per range as children. */
import { describe, expect, it } from 'vitest';
import type { PlannedRun } from '../../../src/etl/load/phases.js';
import type { PartitionPlan } from '../../../src/etl/load/plan.js';
import { commitJobId, runFlow } from '../../../jobs/src/run-flow.js';
import { JOB_OPTIONS, QUEUE_NAMES } from '../../../jobs/src/queues.js';

const partition = (topic: string, number: number, start: number, end: number): PartitionPlan => ({ topic, partition: number, start, end, logStart: 0, highWatermark: end, capped: false });
const partitions = [partition('page.views', 0, 0, 10), partition('page.views', 1, 4, 9), partition('page.views', 12, 0, 3)];
const planned: PlannedRun = {
  plan: { load: 'views', seq: 4, run: 'abc123', plannedAt: '2026-11-29T17:00:00.000Z', partitions, readerSchemas: { 'page.views': { subject: 'page.views-value', version: 1, id: 3 } } },
  tasks: partitions.map((p) => ({ load: 'views', seq: 4, run: 'abc123', plannedAt: '2026-11-29T17:00:00.000Z', partition: p, reader: { subject: 'page.views-value', version: 1, id: 3 } })),
  recovery: { rolledForward: [], stagingRemoved: [], log: { claimed: [1, 2, 3], published: new Set([1, 2, 3]), pending: [], lastClaimed: 3, lastPublished: 3 } },
  problems: [],
};
const file = { loadFile: '/jobs/views.yaml', loadText: 'name: views\n' };

describe('runFlow', () => {
  it('makes the commit the parent and each range a child that fails the parent for good when it fails for good', () => {
    const flow = runFlow(planned, file);
    expect(flow).toMatchObject({ name: 'commit', queueName: QUEUE_NAMES.commits, data: { ...file, plan: planned.plan }, opts: { jobId: 'views.4.abc123', ...JOB_OPTIONS.commit } });
    expect(flow.children?.map((child) => [child.queueName, child.opts?.jobId, child.opts?.failParentOnFailure, child.opts?.attempts])).toEqual([
      [QUEUE_NAMES.tasks, 'views.4.abc123.page.views.0.0', true, JOB_OPTIONS.task.attempts],
      [QUEUE_NAMES.tasks, 'views.4.abc123.page.views.1.4', true, JOB_OPTIONS.task.attempts],
      [QUEUE_NAMES.tasks, 'views.4.abc123.page.views.12.0', true, JOB_OPTIONS.task.attempts],
    ]);
    expect(flow.children?.map((child) => child.data as unknown)).toEqual(planned.tasks.map((task) => ({ ...file, task })));
    expect(commitJobId(planned)).toBe('views.4.abc123');
  });

  it('keeps job ids free of ":" (BullMQ refuses them) for any legal load and topic name', () => {
    const ids = [commitJobId(planned), ...(runFlow(planned, file).children ?? []).map((child) => child.opts?.jobId ?? '')];
    for (const id of ids) expect(id).not.toContain(':');
  });
});
