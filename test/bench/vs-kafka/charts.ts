/**
 * Charts of a results file: one Vega-Lite chart per group (producer, consumer, storage, latency,
 * partitions, data in the log) with the median as a bar and min–max as a line, plus one chart of
 * every Tributary ÷ Kafka ratio. Rendered to SVG by Vega and to PNG by resvg.
 *
 *   tsx test/bench/vs-kafka/charts.ts [docs-dir]
 *
 * re-renders `<docs-dir>/charts/*.png` and rewrites `<docs-dir>/benchmarks.md` from
 * `<docs-dir>/charts/vs-kafka.json` without measuring again (docs-dir defaults to docs/).
 *
 * The renderers (npm: vega, vega-lite, @resvg/resvg-js) are loaded when needed: without
 * @resvg/resvg-js the charts are written as SVG; without vega/vega-lite none are written and the
 * page says so. Everything else in the benchmark works without them.
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { markdownReport } from './report.js';
import { securityPage } from './security-report.js';
import { formatRatio, formatValue, summarize, type Results } from './results.js';

interface VegaView {
  toSVG(): Promise<string>;
  finalize(): void;
}
interface VegaModule {
  parse(spec: unknown): unknown;
  View: new (runtime: unknown, options: { renderer: 'none' }) => VegaView;
}
interface VegaLiteModule {
  compile(spec: unknown): { spec: unknown };
}
interface ResvgModule {
  Resvg: new (svg: string, options: unknown) => { render(): { asPng(): Buffer } };
}

const KAFKA = 'Apache Kafka 3.9.1';
const TRIBUTARY = 'Tributary';
const FONT = 'DejaVu Sans';

const GROUPS: readonly { id: string; title: string }[] = [
  { id: 'producer', title: 'Producer: 200-byte records, one partition' },
  { id: 'idempotence', title: 'Idempotent produce: the Java producer’s default settings, 200-byte records, one partition' },
  { id: 'codecs', title: 'Producer with compression: 200-byte records, one partition' },
  { id: 'consumer', title: 'Consumer: ~200 KB per fetch, one partition' },
  { id: 'storage', title: 'Bytes on disk per 200-byte message' },
  { id: 'latency', title: 'End-to-end latency' },
  { id: 'partitions', title: 'Throughput by partition count' },
  { id: 'prefill', title: 'Throughput with data already in the log' },
  { id: 'replication', title: 'Replication: 3 brokers, RF 3, acks=all (Kafka without fsync, Tributary fsynced on every ISR member)' },
  { id: 'security', title: 'Security: one broker, PLAINTEXT and SASL_SSL (SCRAM-SHA-512) listeners' },
  { id: 'compaction', title: 'Log compaction: cleaner MB/s, peak RSS, produce/fetch beside the cleaner ÷ idle' },
];

async function load<T>(name: string): Promise<T | undefined> {
  try {
    return (await import(name)) as T;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ERR_MODULE_NOT_FOUND') return undefined;
    throw error;
  }
}

function groupSpec(results: Results, group: { id: string; title: string }): object | undefined {
  const figures = results.figures.filter((f) => f.chart === group.id);
  const values: Record<string, unknown>[] = [];
  for (const [order, figure] of figures.entries()) {
    const s = summarize(figure);
    for (const [system, side] of [[KAFKA, s.kafka], [TRIBUTARY, s.tributary]] as const) {
      if (side === undefined) continue;
      values.push({
        figure: figure.label, order, system, median: side.median, min: side.min, max: side.max,
        text: `${formatValue(side.median, figure.unit)}${system === TRIBUTARY ? `  (${formatRatio(s.ratio)})` : ''}`,
      });
    }
  }
  if (values.length === 0) return undefined;
  const unit = [...new Set(figures.map((f) => f.unit))].join(', ');
  const reduced = results.reduced.length > 0 ? ' — REDUCED RUN, not the result' : '';
  // One small chart per figure (each with its own axis: throughputs differ by orders of magnitude).
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title: { text: `${group.title}${reduced}`, subtitle: `bar = median of ${results.options.rounds} run(s), line = min–max; label = median (Tributary ÷ Kafka); ${unit}` },
    background: 'white',
    data: { values },
    facet: {
      row: { field: 'figure', type: 'nominal', sort: { field: 'order', op: 'min' }, header: { title: null, labelAngle: 0, labelOrient: 'top', labelAlign: 'left', labelAnchor: 'start', labelFontSize: 12, labelLimit: 700 } },
    },
    spec: {
      width: 560,
      height: { step: 18 },
      encoding: {
        y: { field: 'system', type: 'nominal', sort: [KAFKA, TRIBUTARY], title: null, axis: null },
        color: { field: 'system', type: 'nominal', scale: { domain: [KAFKA, TRIBUTARY], range: ['#4c78a8', '#f58518'] }, legend: { orient: 'bottom', title: null } },
      },
      layer: [
        { mark: 'bar', encoding: { x: { field: 'median', type: 'quantitative', title: null } } },
        { mark: { type: 'rule', color: 'black' }, encoding: { x: { field: 'min', type: 'quantitative' }, x2: { field: 'max' } } },
        { mark: { type: 'text', align: 'left', dx: 4, fontSize: 10, color: 'black' }, encoding: { x: { field: 'max', type: 'quantitative' }, text: { field: 'text' } } },
      ],
    },
    resolve: { scale: { x: 'independent' } },
    config: { font: FONT, view: { stroke: null } },
  };
}

function ratioSpec(results: Results): object | undefined {
  const values = results.figures.map((figure) => ({ figure, s: summarize(figure) }))
    .filter(({ s }) => s.ratio !== undefined && Number.isFinite(s.ratio))
    .map(({ figure, s }) => ({
      figure: figure.label, ratio: s.ratio, one: 1, text: formatRatio(s.ratio),
      direction: figure.better === 'higher' ? 'higher is better (throughput)' : 'lower is better (latency, bytes)',
    }));
  if (values.length === 0) return undefined;
  const reduced = results.reduced.length > 0 ? ' — REDUCED RUN, not the result' : '';
  const ratiosOnly = values.map((v) => v.ratio ?? 1);
  const domain = [Math.min(0.5, ...ratiosOnly) / 1.2, Math.max(2, ...ratiosOnly) * 1.5];
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title: { text: `Tributary ÷ Apache Kafka 3.9.1, every figure${reduced}`, subtitle: 'ratio of the medians, log scale; the dashed line marks 1.0' },
    background: 'white',
    width: 420,
    height: { step: 18 },
    data: { values },
    encoding: {
      y: { field: 'figure', type: 'nominal', sort: null, title: null, axis: { labelLimit: 480 } },
      color: { field: 'direction', type: 'nominal', legend: { orient: 'bottom', title: null, labelLimit: 400 } },
    },
    layer: [
      { mark: { type: 'rule', strokeWidth: 2 }, encoding: { x: { field: 'one', type: 'quantitative', scale: { type: 'log', domain } }, x2: { field: 'ratio' } } },
      { mark: { type: 'point', filled: true, size: 60 }, encoding: { x: { field: 'ratio', type: 'quantitative', title: 'Tributary ÷ Kafka' } } },
      { mark: { type: 'text', align: 'left', dx: 7, fontSize: 10, color: 'black' }, encoding: { x: { field: 'ratio', type: 'quantitative' }, text: { field: 'text' } } },
      { mark: { type: 'rule', color: 'black', strokeDash: [4, 3] }, encoding: { x: { field: 'one', type: 'quantitative' }, y: { value: 0 }, y2: { value: { expr: 'height' } }, color: { value: 'black' } } },
    ],
    config: { font: FONT, view: { stroke: null } },
  };
}

export interface ChartOutcome {
  /** Chart id → path relative to the docs folder. */
  readonly files: Map<string, string>;
  readonly note: string | undefined;
}

/** Renders every chart of `results` (or only the groups `only`, without the ratio chart) into `<docsDir>/charts/`. */
export async function renderCharts(results: Results, docsDir: string, only?: readonly string[]): Promise<ChartOutcome> {
  const vega = await load<VegaModule>('vega');
  const vegaLite = await load<VegaLiteModule>('vega-lite');
  const files = new Map<string, string>();
  if (vega === undefined || vegaLite === undefined) {
    return { files, note: 'Charts not drawn: the npm packages vega and vega-lite are not installed (npm i -D vega vega-lite @resvg/resvg-js).' };
  }
  const resvg = await load<ResvgModule>('@resvg/resvg-js');
  const chartsDir = join(docsDir, 'charts');
  mkdirSync(chartsDir, { recursive: true });
  const specs: [string, object][] = [];
  for (const group of GROUPS.filter((g) => only === undefined || only.includes(g.id))) {
    const spec = groupSpec(results, group);
    if (spec !== undefined) specs.push([group.id, spec]);
  }
  const ratios = only === undefined ? ratioSpec(results) : undefined;
  if (ratios !== undefined) specs.push(['ratios', ratios]);
  for (const [id, spec] of specs) {
    const view = new vega.View(vega.parse(vegaLite.compile(spec).spec), { renderer: 'none' });
    const svg = await view.toSVG();
    view.finalize();
    for (const ext of ['png', 'svg']) rmSync(join(chartsDir, `${id}.${ext}`), { force: true });
    if (resvg !== undefined) {
      const png = new resvg.Resvg(svg, { font: { loadSystemFonts: true, defaultFontFamily: FONT }, fitTo: { mode: 'zoom', value: 2 }, background: 'white' }).render().asPng();
      writeFileSync(join(chartsDir, `${id}.png`), png);
      files.set(id, `charts/${id}.png`);
    } else {
      writeFileSync(join(chartsDir, `${id}.svg`), svg);
      files.set(id, `charts/${id}.svg`);
    }
  }
  return { files, note: resvg === undefined ? 'Charts written as SVG: @resvg/resvg-js (the PNG renderer) is not installed.' : undefined };
}

export const RESULTS_FILE = join('charts', 'vs-kafka.json');
/** The security scenario's page (issue #21), written when that scenario ran. */
export const SECURITY_PAGE = 'benchmarks-security.md';
/** The results of a run of the security scenario alone (which leaves benchmarks.md and vs-kafka.json as they are). */
export const SECURITY_RESULTS_FILE = join('charts', 'vs-kafka-security.json');

/** A run of nothing but the security scenario: it writes its own page and results only. */
export function securityOnly(results: Results): boolean {
  return results.options.scenarios.every((s) => s === 'security');
}

/**
 * Writes results JSON, charts and benchmarks.md into `docsDir` (and benchmarks-security.md when the
 * security scenario ran); returns the chart note, if any. A run of the security scenario alone
 * writes only benchmarks-security.md, charts/vs-kafka-security.json and its chart, so the page
 * of a full run is not replaced by one that holds nothing but the security figures.
 */
export async function writeDocs(results: Results, docsDir: string): Promise<string | undefined> {
  mkdirSync(join(docsDir, 'charts'), { recursive: true });
  if (securityOnly(results)) {
    writeFileSync(join(docsDir, SECURITY_RESULTS_FILE), `${JSON.stringify(results, null, 2)}\n`);
    const charts = await renderCharts(results, docsDir, ['security']);
    writeFileSync(join(docsDir, SECURITY_PAGE), securityPage(results, charts.files.get('security'), SECURITY_RESULTS_FILE));
    return charts.note;
  }
  writeFileSync(join(docsDir, RESULTS_FILE), `${JSON.stringify(results, null, 2)}\n`);
  const charts = await renderCharts(results, docsDir);
  const page = markdownReport(results, charts.files);
  writeFileSync(join(docsDir, 'benchmarks.md'), charts.note === undefined ? page : `${page}\n*${charts.note}*\n`);
  if (results.figures.some((f) => f.scenario === 'security')) writeFileSync(join(docsDir, SECURITY_PAGE), securityPage(results, charts.files.get('security'), RESULTS_FILE));
  return charts.note;
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const docsDir = resolve(process.argv[2] ?? join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'docs'));
  const results = JSON.parse(readFileSync(join(docsDir, RESULTS_FILE), 'utf8')) as Results;
  const note = await writeDocs(results, docsDir);
  process.stdout.write(`rewrote ${join(docsDir, 'benchmarks.md')} and the charts in ${join(docsDir, 'charts')}${note === undefined ? '' : ` (${note})`}\n`);
}
