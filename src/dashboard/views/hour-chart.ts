/**
 * Records per event hour as an inline SVG bar chart: one bar per hour (the records loaded),
 * coloured by the hour's completeness status, with a dark tick at the count producers reported
 * when the audit is read. Every bar has a <title>, so hovering tells the numbers.
 */
import type { HourRow, HourStatus } from '../hours.js';
import { html, type Html } from './html.js';
import { percent } from './layout.js';

/** Bars are wide while there are few hours, narrow when a day or two are shown. */
const WIDE_BAR = 44;
const NARROW_BAR = 22;
const GAP = 10;
const PLOT_HEIGHT = 120;
const TOP = 16;
const LEFT = 48;
const BOTTOM = 34;

const COLOURS: Readonly<Record<HourStatus, string>> = {
  OK: '#3ea76a',
  LOSS: '#e05252',
  DUPLICATES: '#f0a030',
  OPEN: '#9fb3c8',
  'NO AUDIT': '#4c8bd6',
  'NOT COUNTED': '#9fb3c8',
};

export function hourChart(topic: string, rows: readonly HourRow[]): Html {
  if (rows.length === 0) return html`<p class="muted">no records loaded for ${topic} yet</p>`;
  const BAR = rows.length <= 12 ? WIDE_BAR : NARROW_BAR;
  const top = Math.max(1, ...rows.map((row) => Math.max(row.loaded, row.produced ?? 0)));
  const width = LEFT + rows.length * (BAR + GAP) + GAP;
  const height = TOP + PLOT_HEIGHT + BOTTOM;
  const y = (count: number): number => TOP + PLOT_HEIGHT - (count / top) * PLOT_HEIGHT;
  const bars = rows.map((row, index) => {
    const x = LEFT + GAP + index * (BAR + GAP);
    const label = `${row.hour}:00Z: ${row.loaded} loaded${row.produced === null ? '' : ` of ${row.produced} produced (${percent(row.completenessPercent)})`}, ${row.status}`;
    // The date under the first bar and at each new day; the hour under every bar.
    const day = index === 0 || rows[index - 1]?.hour.slice(0, 10) !== row.hour.slice(0, 10) ? row.hour.slice(5, 10) : '';
    return html`<g data-hour="${row.hour}"><title>${label}</title>
<rect x="${x}" y="${y(row.loaded).toFixed(1)}" width="${BAR}" height="${(TOP + PLOT_HEIGHT - y(row.loaded)).toFixed(1)}" fill="${COLOURS[row.status]}"></rect>
${row.produced === null ? '' : html`<line x1="${x - 2}" x2="${x + BAR + 2}" y1="${y(row.produced).toFixed(1)}" y2="${y(row.produced).toFixed(1)}" stroke="#102a43" stroke-width="2"></line>`}
<text x="${x + BAR / 2}" y="${TOP + PLOT_HEIGHT + 13}" text-anchor="middle">${row.hour.slice(11, 13)}</text>
<text x="${x + BAR / 2}" y="${TOP + PLOT_HEIGHT + 26}" text-anchor="middle">${day}</text></g>`;
  });
  return html`<svg class="hour-chart" data-topic="${topic}" role="img" aria-label="records per event hour of ${topic}" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}">
<line x1="${LEFT}" x2="${width}" y1="${TOP + PLOT_HEIGHT}" y2="${TOP + PLOT_HEIGHT}" stroke="#bcccdc"></line>
<text x="${LEFT - 6}" y="${TOP + 4}" text-anchor="end">${top}</text>
<text x="${LEFT - 6}" y="${TOP + PLOT_HEIGHT}" text-anchor="end">0</text>
${bars}
</svg>`;
}

/** What the colours and the tick mean. */
export function chartLegend(): Html {
  const swatch = (status: HourStatus): Html => html`<span class="swatch" style="background:${COLOURS[status]}"></span>${status} `;
  return html`<p class="legend muted">${(['OK', 'LOSS', 'DUPLICATES', 'OPEN', 'NO AUDIT'] as const).map(swatch)}· bar: records loaded, tick: records produced (audit)</p>`;
}
