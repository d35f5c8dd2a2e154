/** `/audit`: completeness per window and tier of each topic, with a form for the range. */
import type { AuditQuery, AuditView, TopicAuditView } from '../audit-view.js';
import type { Panel } from '../panel.js';
import { html, type Html } from './html.js';
import { page, panel, percent, statusCell } from './layout.js';

export function auditPage(view: Panel<AuditView>, query: AuditQuery): Html {
  const form = html`<form class="range" method="get" action="/audit">
<label>from <input name="from" value="${view.ok ? view.data.from : (query.from ?? '')}"></label>
<label>to <input name="to" value="${view.ok ? view.data.to : (query.to ?? '')}"></label>
<label>topic <input name="topic" value="${query.topics.join(',')}" placeholder="the loads' topics"></label>
<button type="submit">Show</button></form>`;
  if (!view.ok) return page('audit', 'Audit', html`${form}${panel('audit', 'Audit completeness per window', view.error)}`);
  const topics = view.data.topics.length === 0 ? html`<p class="muted">no topics: the load files name none; give one with ?topic=</p>` : view.data.topics.map(topicPanel);
  return page(
    'audit',
    'Audit',
    html`${form}<p class="muted">windows from ${view.data.from} to ${view.data.to}; a window is final ${Math.round(view.data.latenessMs / 1000)} s after its end</p>${topics}`,
  );
}

function topicPanel(view: TopicAuditView): Html {
  const id = `audit-${view.topic}`;
  if (!view.report.ok) return panel(id, `Audit of ${view.topic}`, view.report.error);
  const report = view.report.data;
  if (report.windows.length === 0) return panel(id, `Audit of ${view.topic}`, html`<p class="muted">no audit counts for ${view.topic} in this range</p>`);
  const rows = report.windows.flatMap((window) =>
    window.tiers.length === 0
      ? [html`<tr data-window="${window.start}"><td>${window.start}</td><td>${window.end}</td><td class="number">${window.produced}</td><td>—</td><td></td><td></td><td></td>${statusCell(window.closed ? 'NO OTHER TIER' : 'OPEN')}</tr>`]
      : window.tiers.map(
          (tier) =>
            html`<tr data-window="${window.start}" data-tier="${tier.tier}"><td>${window.start}</td><td>${window.end}</td><td class="number">${window.produced}</td><td>${tier.tier}</td><td class="number">${tier.received}</td><td class="number">${tier.unaudited}</td><td class="number">${percent(tier.completenessPercent)}</td>${statusCell(tier.status)}</tr>`,
        ),
  );
  return panel(
    id,
    `Audit of ${view.topic}`,
    html`<table class="audit"><thead><tr><th>Window start</th><th>Window end</th><th>Produced</th><th>Tier</th><th>Received</th><th>Unknown origin</th><th>Completeness</th><th>Status</th></tr></thead><tbody>${rows}</tbody></table>
<p class="muted">${report.eventsRead} audit events in range, ${report.duplicateDeliveries} repeated deliveries ignored${report.undecodable > 0 ? `, ${report.undecodable} undecodable records skipped` : ''}</p>`,
  );
}

