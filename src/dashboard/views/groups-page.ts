/** `/groups`: consumer-group lag, per group and partition. */
import type { GroupsView } from '../groups-view.js';
import type { Panel } from '../panel.js';
import type { GroupLag } from '../sources/group-source.js';
import { html, type Html } from './html.js';
import { page, panel } from './layout.js';

export function groupsPage(view: Panel<GroupsView>): Html {
  if (!view.ok) return page('groups', 'Consumer groups', panel('groups', 'Consumer groups', view.error));
  const body = view.data.groups.length === 0 ? panel('groups', 'Consumer groups', html`<p class="muted">no consumer groups in ${view.data.zookeeper}</p>`) : view.data.groups.map(groupPanel);
  return page('groups', 'Consumer groups', html`<p class="muted">${view.data.zookeeper}</p>${body}`);
}

function groupPanel(group: GroupLag): Html {
  const dash = (value: string | null): string => value ?? '—';
  return panel(
    `group-${group.group}`,
    `Group ${group.group}`,
    html`<p>${group.members.length} live member${group.members.length === 1 ? '' : 's'} · total lag <strong data-total-lag>${dash(group.totalLag)}</strong>${group.unknownLag > 0 ? html` <span class="muted">(${group.unknownLag} partitions unknown)</span>` : ''}</p>
<table class="lag"><thead><tr><th>Topic</th><th>Partition</th><th>Committed</th><th>Log end</th><th>Lag</th><th>Owner</th></tr></thead><tbody>
${group.partitions.map((p) => html`<tr data-partition="${p.topic}-${p.partition}"><td>${p.topic}</td><td class="number">${p.partition}</td><td class="number">${dash(p.committed)}</td><td class="number">${dash(p.logEnd)}</td><td class="number">${dash(p.lag)}</td><td>${dash(p.owner)}</td></tr>`)}
</tbody></table>`,
  );
}
