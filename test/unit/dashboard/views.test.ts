/** The HTML of our pages: escaping, panels with errors, the hour chart. */
import { describe, expect, it } from 'vitest';
import { hourChart } from '../../../src/dashboard/views/hour-chart.js';
import { html } from '../../../src/dashboard/views/html.js';
import { panel, percent } from '../../../src/dashboard/views/layout.js';
import { groupsPage } from '../../../src/dashboard/views/groups-page.js';

describe('html', () => {
  it('escapes interpolated text and attributes, keeps fragments, flattens lists and drops null', () => {
    const name = '<script>alert("x")</script>&\'';
    const fragment = html`<b>${name}</b>`;
    expect(html`<p title="${name}">${fragment}${[1, ' & ', null, undefined, [2]]}</p>`.text).toBe(
      '<p title="&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;&#39;"><b>&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;&#39;</b>1 &amp; 2</p>',
    );
  });
});

describe('panel', () => {
  it('shows content, or the source, code and message of the error that kept it empty', () => {
    expect(panel('p', 'Title', html`<p>fine</p>`).text).toContain('<p>fine</p>');
    const failed = panel('p', 'Title', { source: 'the warehouse of load x', code: 'WAREHOUSE_UNAVAILABLE', message: 'NameNode <down>' }).text;
    expect(failed).toContain('data-error="WAREHOUSE_UNAVAILABLE"');
    expect(failed).toContain('Cannot read the warehouse of load x: <code>WAREHOUSE_UNAVAILABLE</code> NameNode &lt;down&gt;');
  });

  it('prints percentages as the audit report does: never 100.00% unless exact', () => {
    expect(percent(100)).toBe('100.00%');
    expect(percent(99.9999)).toBe('99.99%');
    expect(percent(null)).toBe('n/a');
  });
});

describe('hourChart', () => {
  it('draws a bar per hour, a tick where producers counted, and a tooltip with the numbers', () => {
    const svg = hourChart('page-views', [
      { hour: '2026-11-29T10', loaded: 100, produced: 100, completenessPercent: 100, status: 'OK' },
      { hour: '2026-11-29T11', loaded: 50, produced: null, completenessPercent: null, status: 'NO AUDIT' },
    ]).text;
    expect(svg.match(/<rect /g)).toHaveLength(2);
    expect(svg.match(/<line x1=/g)).toHaveLength(2); // the axis, and one tick
    expect(svg).toContain('<title>2026-11-29T10:00Z: 100 loaded of 100 produced (100.00%), OK</title>');
    expect(svg).toContain('<title>2026-11-29T11:00Z: 50 loaded, NO AUDIT</title>');
  });

  it('says so when nothing is loaded', () => {
    expect(hourChart('t', []).text).toBe('<p class="muted">no records loaded for t yet</p>');
  });
});

describe('groupsPage', () => {
  it('shows total lag per group and a dash where a partition has no committed offset', () => {
    const page = groupsPage({
      ok: true,
      data: {
        zookeeper: 'ZooKeeper z:2181/online',
        groups: [
          {
            group: 'g',
            members: [],
            totalLag: '40',
            unknownLag: 1,
            partitions: [
              { topic: 't', partition: 0, owner: null, committed: '60', logEnd: '100', lag: '40' },
              { topic: 't', partition: 1, owner: null, committed: null, logEnd: '100', lag: null },
            ],
          },
        ],
      },
    }).text;
    expect(page).toContain('<strong data-total-lag>40</strong> <span class="muted">(1 partitions unknown)</span>');
    expect(page).toContain('<tr data-partition="t-1"><td>t</td><td class="number">1</td><td class="number">—</td><td class="number">100</td><td class="number">—</td><td>—</td></tr>');
  });
});
