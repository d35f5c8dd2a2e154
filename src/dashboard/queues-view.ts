/** The queue summary (`/api/queues`, and the queues panel of the loads page): jobs per state per queue. */
import { gather, type Panel } from './panel.js';
import type { DashboardSources } from './sources.js';
import type { QueueSummary } from './sources/queue-source.js';

export interface QueuesView {
  readonly redis: string;
  readonly prefix: string;
  readonly queues: readonly QueueSummary[];
}

export async function queuesView(sources: DashboardSources): Promise<Panel<QueuesView>> {
  const queues = sources.queues;
  return gather(queues.describe(), sources.timeoutMs, async () => ({ redis: queues.describe(), prefix: queues.prefix, queues: await queues.summaries() }));
}
