/**
 * A planned run as a BullMQ flow: the commit job is the parent, one task job per partition range
 * its children. BullMQ starts the parent only when every child has completed, and hands it the
 * children's return values; a child that fails for good fails the parent (failParentOnFailure),
 * so a run never waits for a range that will not come.
 */
import type { FlowJob, Job, Queue } from 'bullmq';
import type { PlannedRun } from '../../src/etl/load/phases.js';
import type { CommitJobData, LoadFileData, TaskJobData } from './job-data.js';
import { JOB_NAMES, JOB_OPTIONS, QUEUE_NAMES } from './queues.js';

/** `<load>.<seq>.<run>`: readable in a dashboard, unique per run (the run id is random). */
export function commitJobId(planned: PlannedRun): string {
  const { plan } = planned;
  return `${plan.load}.${plan.seq}.${plan.run}`;
}

export function runFlow(planned: PlannedRun, file: LoadFileData): FlowJob {
  const parentId = commitJobId(planned);
  const commit: CommitJobData = { loadFile: file.loadFile, loadText: file.loadText, plan: planned.plan };
  return {
    name: JOB_NAMES.commit,
    queueName: QUEUE_NAMES.commits,
    data: commit,
    opts: { jobId: parentId, ...JOB_OPTIONS.commit },
    children: planned.tasks.map((task) => {
      const data: TaskJobData = { loadFile: file.loadFile, loadText: file.loadText, task };
      return {
        name: JOB_NAMES.task,
        queueName: QUEUE_NAMES.tasks,
        data,
        // Numbers have no dot, so `<topic>.<partition>.<slice start>` names each slice once.
        opts: { jobId: `${parentId}.${task.partition.topic}.${task.partition.partition}.${task.slice?.start ?? task.partition.start}`, ...JOB_OPTIONS.task, failParentOnFailure: true },
      };
    }),
  };
}

/** States of a commit job whose run is not over yet. */
export const UNFINISHED_STATES = ['active', 'waiting', 'waiting-children', 'delayed', 'prioritized'] as const;

/** The commit job of a run of `load` that has not finished (nor failed), if any. */
export async function unfinishedRunOf(commits: Queue, load: string): Promise<Job | undefined> {
  const jobs = (await commits.getJobs([...UNFINISHED_STATES])) as Job[];
  return jobs.find((job) => (job.data as Partial<CommitJobData> | undefined)?.plan?.load === load);
}
