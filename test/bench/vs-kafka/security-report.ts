/**
 * The security scenario's summary (issue #21's performance target), from the results file alone:
 * per client, each system's records/s over PLAINTEXT and over SASL_SSL, its TLS cost (SASL_SSL ÷
 * PLAINTEXT) and Tributary ÷ Kafka over SASL_SSL — as a console table, and as
 * docs/benchmarks-security.md (written beside benchmarks.md, so into docs/ only by a non-smoke run
 * of this checkout's broker).
 */
import { formatRatio, formatValue, summarize, textTable, type Results } from './results.js';

/** The client runs of the scenario: id suffix and what it is. */
const CLIENTS: readonly { readonly id: string; readonly what: string; readonly kind: 'produce' | 'consume' }[] = [
  { id: 'produce.b50', what: 'produce, batch 50 (Java ProducerPerformance)', kind: 'produce' },
  { id: 'produce.default', what: 'produce, default settings: idempotent, acks=all (Java ProducerPerformance)', kind: 'produce' },
  { id: 'consume.kcat', what: 'consume, ~200 KB fetches (kcat -C)', kind: 'consume' },
  { id: 'consume.java', what: 'consume, ~200 KB fetches (Java ConsoleConsumer)', kind: 'consume' },
];

/** Figures of the README headline table: the SASL_SSL throughputs and the TLS costs. */
export const SECURITY_HEADLINE: readonly string[] = CLIENTS.flatMap((c) => [`security.sasl_ssl.${c.id}`, `security.tls-cost.${c.id}`]);

type System = 'kafka' | 'tributary';

function medianOf(results: Results, id: string, system: System): number | undefined {
  const figure = results.figures.find((f) => f.id === id);
  return figure === undefined ? undefined : summarize(figure)[system]?.median;
}

function ratioOf(results: Results, id: string): number | undefined {
  const figure = results.figures.find((f) => f.id === id);
  return figure === undefined ? undefined : summarize(figure).ratio;
}

const rate = (x: number | undefined): string => (x === undefined ? '—' : formatValue(x, 'records/s'));
const cost = (x: number | undefined): string => (x === undefined ? '—' : `${x.toFixed(2)}×`);

/** One row per client that ran: Kafka PLAINTEXT / SASL_SSL / TLS cost, the same for Tributary, T ÷ K over SASL_SSL. */
function rows(results: Results): string[][] {
  const header = ['client', 'Kafka PLAINTEXT', 'Kafka SASL_SSL', 'Kafka TLS cost', 'Tributary PLAINTEXT', 'Tributary SASL_SSL', 'Tributary TLS cost', 'T ÷ K over SASL_SSL'];
  const body: string[][] = [];
  for (const c of CLIENTS) {
    const ids = { plain: `security.plaintext.${c.id}`, secure: `security.sasl_ssl.${c.id}`, cost: `security.tls-cost.${c.id}` };
    if (!results.figures.some((f) => Object.values(ids).includes(f.id))) continue;
    const side = (s: System): string[] => [rate(medianOf(results, ids.plain, s)), rate(medianOf(results, ids.secure, s)), cost(medianOf(results, ids.cost, s))];
    body.push([c.what, ...side('kafka'), ...side('tributary'), formatRatio(ratioOf(results, ids.secure))]);
  }
  return body.length === 0 ? [] : [header, ...body];
}

/** The console summary (empty when the scenario did not run). */
export function securityConsole(results: Results): string[] {
  const table = rows(results);
  if (table.length === 0) return [];
  return ['Security (records/s medians; TLS cost = SASL_SSL ÷ PLAINTEXT of the same client and broker):', ...textTable(table)];
}

function mdTable(table: readonly (readonly string[])[]): string[] {
  const [header, ...body] = table;
  if (header === undefined) return [];
  return [`| ${header.join(' | ')} |`, `|${header.map((_, i) => (i === 0 ? ' --- ' : ' ---: ')).join('|')}|`, ...body.map((r) => `| ${r.join(' | ')} |`)];
}

/** The Method bullet of benchmarks.md (and of the security page). */
export function securityMethod(results: Results): string {
  const o = results.options;
  return `- **Security (issue #21).** Each system once more as a single broker (same settings, a fresh data folder, one system at a time) with two listeners, \`PLAINTEXT://127.0.0.1:P1,SASL_SSL://127.0.0.1:P2\`: TLS from PEM files (\`ssl.keystore.location\` = EC P-256 key + certificate chain, \`ssl.truststore.location\` = the CA; certificates by ${results.securitySettings?.tributary?.['certificates'] ?? 'scripts/make-certificates.sh'}) and SASL \`SCRAM-SHA-512\` for one user with a random password (4096 iterations on both; Kafka: \`kafka-storage format --add-scram\`, Tributary: \`tributary users add --data-dir\` before the start). ` +
    `Over each listener, ${o.records.toLocaleString('en-US')} records: Java \`ProducerPerformance\` with the batch-50 settings and with the Java producer’s defaults (idempotent, \`acks=all\`), then \`kcat -C\` and the Java \`ConsoleConsumer\` reading the same PLAINTEXT-produced batch-50 topic; each client over both listeners back to back, PLAINTEXT first in odd rounds, SASL_SSL first in even ones. The clients read the security settings from files (Java: \`security.protocol=SASL_SSL\`, \`sasl.mechanism=SCRAM-SHA-512\`, \`sasl.jaas.config=…ScramLoginModule required username=… password=…;\`, \`ssl.truststore.type=PEM\`, \`ssl.truststore.location\`; kcat \`-F\`: \`security.protocol\`, \`sasl.mechanisms\`, \`sasl.username\`, \`sasl.password\`, \`ssl.ca.location\`), with hostname verification on. ` +
    'The TLS cost of a system is SASL_SSL ÷ PLAINTEXT records/s of the same client in the same session (1.00× = free; lower = dearer), recorded per session as its own figure so that Kafka’s and Tributary’s stand side by side. Connection set-up and the SCRAM exchange happen before the first record and fall outside every figure except the producers’ (whose clock starts at the first send).';
}

/** docs/benchmarks-security.md. */
export function securityPage(results: Results, chartFile: string | undefined, resultsFile: string): string {
  const m = results.machine;
  const out: string[] = ['# Benchmarks: Tributary beside Apache Kafka 3.9.1 over SASL_SSL', ''];
  out.push(`> Generated by \`BENCH_SCENARIOS=security npm run bench:vs-kafka\` (test/bench/vs-kafka.ts, vs-kafka/security.ts) on ${results.finishedAt ?? results.startedAt}, from \`docs/${resultsFile}\`; do not edit by hand. ` +
    `Medians of ${results.options.rounds} alternated round(s) on ${m.cpus} × ${m.cpuModel}; load average ${m.loadAtStart.join(' / ')} at the start, ${(m.loadAtEnd ?? []).join(' / ')} at the end.`, '');
  if (results.reduced.length > 0) out.push(`> **Reduced run:** ${results.reduced.join('; ')}.`, '');
  out.push('## Results', '', ...mdTable(rows(results)), '');
  if (chartFile !== undefined) out.push(`![Security](${chartFile})`, '');
  out.push('## Target of issue #21', '');
  const targets: string[][] = [['target', 'this run']];
  for (const c of CLIENTS) {
    const ratio = ratioOf(results, `security.sasl_ssl.${c.id}`);
    targets.push([`Over SASL_SSL, ${c.what} ≥ 1.0× Kafka`, ratio === undefined ? 'not measured in this run' : `${formatRatio(ratio)} — ${ratio >= 1 ? 'reached' : '**not reached**'}`]);
  }
  const costs = CLIENTS.map((c) => {
    const t = medianOf(results, `security.tls-cost.${c.id}`, 'tributary');
    const k = medianOf(results, `security.tls-cost.${c.id}`, 'kafka');
    return t === undefined && k === undefined ? undefined : `${c.id}: Tributary ${cost(t)}, Kafka ${cost(k)}`;
  }).filter((x) => x !== undefined);
  targets.push(['TLS cost (SASL_SSL ÷ PLAINTEXT throughput) on Tributary reported beside Kafka’s', costs.length === 0 ? 'not measured in this run' : costs.join('; ')]);
  out.push(...mdTable(targets), '');
  out.push('## Method', '', securityMethod(results), '');
  out.push('Everything else (broker settings, flush policy, how each client is timed, the machine) is as in [benchmarks.md](benchmarks.md).', '');
  if (results.securitySettings !== undefined) {
    out.push('Settings beyond the single-broker sessions’ (no secret listed):', '');
    out.push(...mdTable([['broker', 'settings'], ...Object.entries(results.securitySettings).map(([name, s]) => [name, Object.entries(s).map(([k, v]) => `\`${k}=${v}\``).join(', ')])]), '');
  }
  const notes = results.notes.filter((n) => n.startsWith('security'));
  if (notes.length > 0) out.push('## Notes', '', ...notes.map((n) => `- ${n}`), '');
  return `${out.join('\n')}\n`;
}
