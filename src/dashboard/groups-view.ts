/** The consumer-group page's data (`/groups` and `/api/groups`): lag per group and partition. */
import { gather, notConfigured, type Panel } from './panel.js';
import type { DashboardSources } from './sources.js';
import type { GroupLag } from './sources/group-source.js';

export interface GroupsView {
  readonly zookeeper: string;
  readonly groups: readonly GroupLag[];
}

export async function groupsView(sources: DashboardSources): Promise<Panel<GroupsView>> {
  const groups = sources.groups;
  if (groups === undefined) return notConfigured('consumer groups', 'the dashboard was started without --zookeeper (the ZooKeeper of the cluster whose consumer groups to show)');
  return gather(groups.describe(), sources.timeoutMs, async () => ({ zookeeper: groups.describe(), groups: await groups.groups() }));
}
