/** `/`: the loads, their last runs, records per event hour with completeness, and the queues. */
import { BULL_BOARD_PATH } from '../bull-board.js';
import type { LoadsView, LoadView, TopicHoursView } from '../loads-view.js';
import type { Panel } from '../panel.js';
import type { QueuesView } from '../queues-view.js';
import { JOB_STATES } from '../sources/queue-source.js';
import { chartLegend, hourChart } from './hour-chart.js';
import { html, type Html } from './html.js';
import { errorBox, page, panel, percent, statusCell } from './layout.js';

export function loadsPage(loads: Panel<LoadsView>, queues: Panel<QueuesView>): Html {
  const body = loads.ok
    ? html`${panel('loads', `Loads in ${loads.data.directory}`, loadsTable(loads.data))}${loads.data.loads.map(loadPanel)}`
    : panel('loads', 'Loads', loads.error);
  return page('loads', 'Loads', html`${body}${panel('queues', 'Queues', queues.ok ? queuesTable(queues.data) : queues.error)}`);
}

function loadsTable(view: LoadsView): Html {
  const rows = view.loads.map((load) => {
    const last = load.runs.ok ? load.runs.data.latest[0] : undefined;
    return html`<tr data-load="${load.name}">
<td><a href="#load-${load.name}">${load.name}</a></td><td>${load.schedule ?? '—'}</td><td>${load.topics}</td><td>${load.warehouse}</td><td>${load.format}/${load.codec}</td>
${load.runs.ok ? html`<td class="number">${load.runs.data.commits}</td><td class="number">${load.runs.data.records}</td><td>${last === undefined ? 'never' : `${last.seq} at ${last.plannedAt}`}</td>` : html`<td colspan="3" class="status status-LOSS">warehouse unreadable (${load.runs.error.code})</td>`}
</tr>`;
  });
  return html`${view.loads.length === 0 ? html`<p class="muted">no load files in ${view.directory}</p>` : html`<table>
<thead><tr><th>Load</th><th>Schedule</th><th>Topics</th><th>Warehouse</th><th>Format</th><th>Commits</th><th>Records loaded</th><th>Last run</th></tr></thead>
<tbody>${rows}</tbody></table>`}
${view.problems.map((problem) => html`<div class="error" data-problem="${problem.file}">Load file ${problem.file} is not usable: <code>${problem.code}</code> ${problem.message}</div>`)}`;
}

function loadPanel(load: LoadView): Html {
  const runs = load.runs.ok
    ? load.runs.data.latest.length === 0
      ? html`<p class="muted">no commits yet</p>`
      : html`<table class="runs"><thead><tr><th>Commit</th><th>State</th><th>Planned at</th><th>Partitions</th><th>Records</th><th>Quarantined</th><th>Files</th></tr></thead><tbody>
${load.runs.data.latest.map((commit) => html`<tr data-seq="${commit.seq}"><td class="number">${commit.seq}</td><td>${commit.state}</td><td>${commit.plannedAt}</td><td class="number">${commit.partitions}</td><td class="number">${commit.records}</td><td class="number">${commit.quarantined}</td><td class="number">${commit.files}</td></tr>`)}
</tbody></table>${load.runs.data.commits > load.runs.data.latest.length ? html`<p class="muted">the latest ${load.runs.data.latest.length} of ${load.runs.data.commits} commits</p>` : ''}`
    : errorBox(load.runs.error);
  const hours = load.hours.ok ? load.hours.data.map(topicHours) : errorBox(load.hours.error);
  return panel(`load-${load.name}`, `Load ${load.name}`, html`<h3>Last runs</h3>${runs}<h3>Records per event hour (UTC)</h3>${hours}`);
}

function topicHours(view: TopicHoursView): Html {
  const audit =
    view.audit.state === 'off'
      ? html`<p class="muted">completeness needs the audit counts: start the dashboard with --bootstrap-server and --registry</p>`
      : view.audit.state === 'error'
        ? errorBox(view.audit.error)
        : '';
  return html`<div class="topic-hours" data-topic="${view.topic}"><h3>${view.topic}</h3>${audit}<div class="side-by-side"><div>${hourChart(view.topic, view.rows)}${view.rows.length === 0 ? '' : chartLegend()}</div>
${view.rows.length === 0 ? '' : html`<table class="hours"><thead><tr><th>Hour</th><th>Loaded</th><th>Produced</th><th>Completeness</th><th>Status</th></tr></thead><tbody>
${view.rows.map((row) => html`<tr data-hour="${row.hour}"><td>${row.hour}</td><td class="number">${row.loaded}</td><td class="number">${row.produced ?? '—'}</td><td class="number">${percent(row.completenessPercent)}</td>${statusCell(row.status)}</tr>`)}
</tbody></table>`}</div></div>`;
}

function queuesTable(view: QueuesView): Html {
  if (view.queues.length === 0) return html`<p class="muted">no BullMQ queues in ${view.redis}</p>`;
  return html`<p>${view.redis} · <a href="${BULL_BOARD_PATH}">open Bull Board</a></p><table><thead><tr><th>Queue</th>${JOB_STATES.map((state) => html`<th>${state}</th>`)}</tr></thead><tbody>
${view.queues.map((queue) => html`<tr data-queue="${queue.name}"><td><a href="${BULL_BOARD_PATH}/queue/${encodeURIComponent(queue.name)}">${queue.name}</a></td>${JOB_STATES.map((state) => html`<td class="number">${queue.counts[state]}</td>`)}</tr>`)}
</tbody></table>`;
}
