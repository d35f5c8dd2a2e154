/**
 * docs/benchmarks.md and the README headline table, generated from the results file alone (so
 * `tsx test/bench/vs-kafka/charts.ts` or a re-run can rebuild them without measuring again).
 */
import { FSYNC_NOTE } from './cluster.js';
import { formatSize } from './options.js';
import { SECURITY_HEADLINE, securityMethod } from './security-report.js';
import {
  formatRatio, formatSide, formatValue, summarize, type Figure, type FigureSummary, type Results,
} from './results.js';

const HEADLINE = ['produce.b1', 'produce.b50', 'produce.default', 'produce.kcat.b1', 'produce.kcat', 'consume.kcat', 'consume.java', 'storage.b50', 'latency.java.p50', 'latency.java.p99', 'latency.probe.p50', 'latency.probe.p99',
  'replication.produce.java', 'replication.produce.kcat', 'replication.consume.kcat', 'replication.latency.p50', 'replication.latency.p99', 'replication.failover',
  ...SECURITY_HEADLINE];

const CHARTS: readonly { id: string; title: string }[] = [
  { id: 'producer', title: 'Producer (the paper’s test)' },
  { id: 'idempotence', title: 'Idempotent produce (issue #17)' },
  { id: 'codecs', title: 'Producer with compression (issue #16)' },
  { id: 'consumer', title: 'Consumer (the paper’s test)' },
  { id: 'storage', title: 'Storage overhead' },
  { id: 'latency', title: 'End-to-end latency' },
  { id: 'partitions', title: 'Scale: partitions' },
  { id: 'prefill', title: 'Scale: data already in the log' },
  { id: 'replication', title: 'Replication: three brokers, replication factor 3, acks=all' },
  { id: 'security', title: 'Security: PLAINTEXT and SASL_SSL (SCRAM-SHA-512) listeners of one broker' },
  { id: 'compaction', title: 'Log compaction (issue #34)' },
];

function mdTable(rows: readonly (readonly string[])[]): string[] {
  const [header, ...body] = rows;
  if (header === undefined) return [];
  return [`| ${header.join(' | ')} |`, `|${header.map((_, i) => (i === 0 ? ' --- ' : ' ---: ')).join('|')}|`, ...body.map((r) => `| ${r.join(' | ')} |`)];
}

function asGood(s: FigureSummary): string {
  return s.tributaryAsGood === undefined ? '' : s.tributaryAsGood ? 'yes' : 'no';
}

/** The table to paste into the README. */
export function headlineTable(results: Results): string[] {
  const rows: string[][] = [['', 'Apache Kafka 3.9.1', 'Tributary', 'Tributary ÷ Kafka']];
  for (const id of HEADLINE) {
    const figure = results.figures.find((f) => f.id === id);
    if (figure === undefined) continue;
    const s = summarize(figure);
    const value = (x: typeof s.kafka): string => (x === undefined ? '—' : `${formatValue(x.median, figure.unit)} ${figure.unit}`);
    rows.push([figure.label, value(s.kafka), value(s.tributary), formatRatio(s.ratio)]);
  }
  const lines = mdTable(rows);
  const note = results.reduced.length > 0
    ? `*Medians of ${results.options.rounds} alternated runs of a reduced run (${results.reduced.join('; ')}), load average ${results.machine.loadAtStart.join(' ')} at the start on ${results.machine.cpus} cores${loaded(results) ? ', shared with other work' : ''}; details in docs/benchmarks.md.*`
    : `*Medians of ${results.options.rounds} alternated runs on ${results.machine.cpus} × ${results.machine.cpuModel}; details in docs/benchmarks.md.*`;
  return [...lines, '', note];
}

function figureRows(figures: readonly Figure[]): string[] {
  const rows: string[][] = [['figure', 'unit', 'Kafka min / **median** / max', 'Tributary min / **median** / max', 'T ÷ K per round', 'T ÷ K (medians)', 'Tributary as good?']];
  for (const figure of figures) {
    const s = summarize(figure);
    rows.push([figure.label, `${figure.unit} (${figure.better} is better)`, formatSide(s.kafka, figure.unit), formatSide(s.tributary, figure.unit),
      s.roundRatios.map((r) => r.toFixed(2)).join(', ') || '—', `**${formatRatio(s.ratio)}**`, asGood(s)]);
  }
  return mdTable(rows);
}

function detailRows(figures: readonly Figure[]): string[] {
  const lines: string[] = [];
  for (const figure of figures) {
    const withDetail = figure.samples.filter((s) => s.detail !== undefined && Object.keys(s.detail).length > 0);
    if (withDetail.length === 0) continue;
    lines.push(`- ${figure.label}: ${withDetail.map((s) => `${s.system} r${s.round} {${Object.entries(s.detail ?? {}).map(([k, v]) => `${k}: ${typeof v === 'number' ? +v.toFixed(2) : v}`).join(', ')}}`).join('; ')}`);
  }
  return lines;
}

/** More runnable work than cores at the start or the end: other work shared the machine. */
function loaded(results: Results): boolean {
  const m = results.machine;
  return Math.max(m.loadAtStart[0] ?? 0, m.loadAtEnd?.[0] ?? 0) > m.cpus;
}

interface Target {
  readonly what: string;
  readonly check: (results: Results) => string;
}

function medianOf(results: Results, id: string, system: 'kafka' | 'tributary'): number | undefined {
  const figure = results.figures.find((f) => f.id === id);
  return figure === undefined ? undefined : summarize(figure)[system]?.median;
}

function ratioOf(results: Results, id: string): number | undefined {
  const figure = results.figures.find((f) => f.id === id);
  return figure === undefined ? undefined : summarize(figure).ratio;
}

const verdict = (ok: boolean): string => (ok ? 'reached' : '**not reached**');
const notMeasured = 'not measured in this run';

const TARGETS: readonly Target[] = [
  ...(['b1', 'b50'] as const).map((batch): Target => ({
    what: `Producer ≥ 1.0× Kafka at batch ${batch.slice(1)}`,
    check: (r) => {
      const ratio = ratioOf(r, `produce.${batch}`);
      return ratio === undefined ? notMeasured : `${formatRatio(ratio)} — ${verdict(ratio >= 1)}`;
    },
  })),
  ...(['kcat', 'java'] as const).map((client): Target => ({
    what: `Consumer ≥ 1.0× Kafka (${client === 'kcat' ? 'kcat' : 'Java console consumer'})`,
    check: (r) => {
      const ratio = ratioOf(r, `consume.${client}`);
      return ratio === undefined ? notMeasured : `${formatRatio(ratio)} — ${verdict(ratio >= 1)}`;
    },
  })),
  {
    what: 'Storage overhead ≤ 9 bytes per message at batch 50 (bytes on disk per message − 200-byte value)',
    check: (r) => {
      const t = medianOf(r, 'storage.b50', 'tributary');
      const k = medianOf(r, 'storage.b50', 'kafka');
      if (t === undefined) return notMeasured;
      return `Tributary ${(t - 200).toFixed(1)} B${k === undefined ? '' : `, Kafka ${(k - 200).toFixed(1)} B`} — ${verdict(t - 200 <= 9)} (a v2 batch of 50 costs 61 + 50 × 9 bytes of framing: 10.2 B per message is the format's floor; the paper's 9 B was the 2011 format)`;
    },
  },
  {
    what: 'Throughput flat (±10%) between the smallest and the largest pre-filled log',
    check: (r) => {
      const ids = r.figures.filter((f) => f.scenario === 'prefill').map((f) => f.id);
      const sizes = [...new Set(ids.map((id) => id.split('.')[1] ?? ''))];
      const [smallest, largest] = [sizes[0], sizes.at(-1)];
      if (smallest === undefined || largest === undefined || smallest === largest) return notMeasured;
      const change = (kind: string, system: 'kafka' | 'tributary'): number | undefined => {
        const a = medianOf(r, `prefill.${smallest}.${kind}`, system);
        const b = medianOf(r, `prefill.${largest}.${kind}`, system);
        return a === undefined || b === undefined ? undefined : b / a - 1;
      };
      const percent = (x: number): string => `${x >= 0 ? '+' : ''}${(x * 100).toFixed(1)}%`;
      const parts = (['produce', 'consume'] as const).map((kind) => {
        const mine = change(kind, 'tributary');
        if (mine === undefined) return `${kind}: ${notMeasured}`;
        const kafka = change(kind, 'kafka');
        return `${kind} ${percent(mine)} (${verdict(Math.abs(mine) <= 0.1)}${kafka === undefined ? '' : `; Kafka ${percent(kafka)}`})`;
      });
      return `Tributary, ${smallest} → ${largest}: ${parts.join('; ')}. A gain as large as a loss means the machine's load moved between the runs, not the log size`;
    },
  },
  {
    what: 'Producer with compression ≥ 1.0× Kafka (issue #16: Java ProducerPerformance per codec, kcat -P lz4)',
    check: (r) => {
      const figures = r.figures.filter((f) => f.scenario === 'produce-codecs');
      if (figures.length === 0) return notMeasured;
      return figures.map((f) => {
        const ratio = summarize(f).ratio;
        return `${f.id.replace(/^produce\./, '')} ${formatRatio(ratio)}${ratio === undefined ? '' : ` (${verdict(ratio >= 1)})`}`;
      }).join('; ');
    },
  },
  ...([['replication.produce.java', 'Java ProducerPerformance, default settings'], ['replication.produce.kcat', 'kcat -P'], ['replication.consume.kcat', 'kcat -C']] as const).map(([id, client]): Target => ({
    what: `Replication, RF 3 on three brokers: ${id.includes('consume') ? 'consume' : 'produce acks=all'} ≥ 1.0× Kafka (${client})`,
    check: (r) => {
      const ratio = ratioOf(r, id);
      return ratio === undefined ? notMeasured : `${formatRatio(ratio)} — ${verdict(ratio >= 1)}${id.includes('produce') ? ' (Tributary fsyncs on every in-sync replica before answering, Kafka does not fsync)' : ''}`;
    },
  })),
  {
    what: 'Replication: acks=all latency p50 / p99 reported beside Kafka’s (Java EndToEndLatency, acks=all)',
    check: (r) => {
      const side = (system: 'kafka' | 'tributary'): string | undefined => {
        const p50 = medianOf(r, 'replication.latency.p50', system);
        const p99 = medianOf(r, 'replication.latency.p99', system);
        return p50 === undefined || p99 === undefined ? undefined : `${formatValue(p50, 'ms')} / ${formatValue(p99, 'ms')} ms`;
      };
      const t = side('tributary');
      const k = side('kafka');
      return t === undefined ? notMeasured : `Tributary ${t}${k === undefined ? '' : `, Kafka ${k}`} (reported; Kafka’s without fsync)`;
    },
  },
  {
    what: 'Replication: leader SIGKILL → first acks=all write acknowledged by the new leader, beside Kafka’s with the same session timeout',
    check: (r) => {
      const t = medianOf(r, 'replication.failover', 'tributary');
      const k = medianOf(r, 'replication.failover', 'kafka');
      if (t === undefined) return notMeasured;
      return `Tributary ${Math.round(t).toLocaleString('en-US')} ms${k === undefined ? '' : `, Kafka ${Math.round(k).toLocaleString('en-US')} ms (${formatRatio(t / k)})`}, session timeout ${r.options.sessionTimeoutMs ?? 6000} ms on both`;
    },
  },
  {
    what: 'Compaction (issue #34): cleaner throughput ≥ 1.0× Kafka; peak RSS bounded by the dedupe buffer; produce and fetch beside the cleaner ≥ 0.9× of idle',
    check: (r) => {
      const cleaner = ratioOf(r, 'compaction.cleaner');
      if (cleaner === undefined) return notMeasured;
      const side = (id: string): string => {
        const t = medianOf(r, id, 'tributary');
        const k = medianOf(r, id, 'kafka');
        return t === undefined ? notMeasured : `Tributary ${formatRatio(t)} (${verdict(t >= 0.9)})${k === undefined ? '' : `, Kafka ${formatRatio(k)}`}`;
      };
      const rss = (system: 'kafka' | 'tributary'): string => {
        const peak = medianOf(r, 'compaction.rss.peak', system);
        return peak === undefined ? '—' : `${Math.round(peak).toLocaleString('en-US')} MiB`;
      };
      return `cleaner ${formatRatio(cleaner)} — ${verdict(cleaner >= 1)}; peak RSS Tributary ${rss('tributary')}, Kafka ${rss('kafka')}; produce beside the cleaner: ${side('compaction.produce.ratio')}; fetch: ${side('compaction.fetch.ratio')}`;
    },
  },
  // For the producer targets, librdkafka's figure at the same batching (kcat -P) is shown beside
  // the Java producer's: at batch 1 the Java producer waits for each request, so it measures itself.
  ...([['produce.b1', 50_000, 'produced at batch 1', 'produce.kcat.b1'], ['produce.b50', 400_000, 'produced at batch 50', 'produce.kcat'],
    ['consume.kcat', 22_000, 'consumed (kcat)', undefined], ['consume.java', 22_000, 'consumed (Java console consumer)', undefined]] as const)
    .map(([id, paper, what, librdkafkaId]): Target => ({
      what: `The paper’s ${paper.toLocaleString('en-US')} messages/s ${what} exceeded`,
      check: (r) => {
        const rate = (x: number): string => `${Math.round(x).toLocaleString('en-US')}/s`;
        const t = medianOf(r, id, 'tributary');
        const k = medianOf(r, id, 'kafka');
        if (t === undefined) return notMeasured;
        const sameClient = k === undefined ? '' : ` (Kafka ${rate(k)} with the same client)`;
        const lt = librdkafkaId === undefined ? undefined : medianOf(r, librdkafkaId, 'tributary');
        if (t > paper || lt === undefined) return `Tributary ${rate(t)} — ${verdict(t > paper)}${sameClient}`;
        const lk = librdkafkaId === undefined ? undefined : medianOf(r, librdkafkaId, 'kafka');
        const librdkafka = `with librdkafka (kcat -P${id === 'produce.b1' ? ', batch.num.messages=1' : ''}) Tributary ${rate(lt)}${lk === undefined ? '' : `, Kafka ${rate(lk)}`}`;
        const why = lt > paper
          ? 'the Java producer, not the broker, is the limit: librdkafka goes faster on the same broker'
          : 'with either client: at one record per request the per-request cost on 2 cores shared with the client is the limit';
        return `Java producer: Tributary ${rate(t)}${sameClient}; ${librdkafka} — ${verdict(lt > paper)} (${why})`;
      },
    })),
];

export function markdownReport(results: Results, chartFiles: ReadonlyMap<string, string>): string {
  const m = results.machine;
  const o = results.options;
  const out: string[] = [];
  out.push('# Benchmarks: Tributary beside Apache Kafka 3.9.1', '');
  out.push(`> Generated by \`npm run bench:vs-kafka\` (test/bench/vs-kafka.ts) on ${results.finishedAt ?? results.startedAt}, from \`docs/charts/vs-kafka.json\`. ` +
    'Re-running the benchmark rewrites this page and the charts; do not edit it by hand. A benchmark asserts nothing: every figure is a ratio measured in the same run.', '');
  if (results.reduced.length > 0) {
    out.push(`> **Reduced run${loaded(results) ? ' on a loaded machine' : ''}:** ${results.reduced.join('; ')}. ` +
      `Load average at the start ${m.loadAtStart.join(' / ')}, at the end ${(m.loadAtEnd ?? []).join(' / ')}, on ${m.cpus} cores${loaded(results) ? ' shared with other work, so absolute figures are depressed; each ratio compares runs of the same session' : ''}. ` +
      'The issue’s full sizes are `npm run bench:vs-kafka` with no BENCH_* variables (hours, for a quiet machine).', '');
  }
  out.push('## Headline', '', ...headlineTable(results), '');

  out.push('## Machine', '');
  out.push(`- CPU: ${m.cpus} × ${m.cpuModel}${m.cpuMHz > 0 ? ` (${m.cpuMHz} MHz reported)` : ' (clock not reported by the VM)'}`);
  out.push(`- Memory: ${m.memoryGiB} GiB`, `- Disk of both brokers' data: ${m.disk}`, `- OS: ${m.os}`);
  out.push(`- Node ${m.node}; ${m.java}; kcat: ${m.kcat}`);
  const checkout = results.tributaryCheckout;
  if (checkout !== undefined) out.push(`- Tributary broker from ${checkout.dir} at commit ${checkout.commit.slice(0, 12)} (“${checkout.subject}”)${checkout.modified ? ', with uncommitted changes' : ''}`);
  out.push(`- Load average (1/5/15 min) at the start ${m.loadAtStart.join(' / ')}, at the end ${(m.loadAtEnd ?? []).join(' / ')}`);
  const starts = (system: 'kafka' | 'tributary', cluster: boolean): string => results.startSeconds.filter((s) => s.system === system && (s.setup === '3 brokers') === cluster && s.setup !== 'SASL_SSL').map((s) => s.seconds.toFixed(1)).join(', ');
  out.push(`- Broker start-up (launch → answers Metadata), seconds: Kafka ${starts('kafka', false) || '—'}; Tributary ${starts('tributary', false) || '—'}`);
  if (results.startSeconds.some((s) => s.setup === '3 brokers')) {
    out.push(`- 3-broker cluster start-up (first launch → every broker listed by Metadata; Kafka: storage format of 4 nodes included, Tributary: ZooKeeper included), seconds: Kafka ${starts('kafka', true) || '—'}; Tributary ${starts('tributary', true) || '—'}`);
  }
  out.push('');

  out.push('## Method', '');
  out.push(
    `- **Alternation.** ${o.rounds} round(s). In each round each broker is started fresh (empty data folder), runs every scenario, and is stopped before the other starts — never both at once; odd rounds start with Kafka, even rounds with Tributary. Both use the same disk (one run folder), loopback, and the same clients on the same machine.`,
    `- **Brokers.** Apache Kafka ${results.kafkaVersion}: single-node KRaft (broker and controller in one JVM), storage formatted with \`kafka.tools.StorageTool format\`, then \`kafka.Kafka\`, -Xms/-Xmx ${o.heapMb} MiB and the G1 options of kafka-run-class.sh; default thread counts (3 network, 8 I/O threads). ` +
      `Tributary: \`tributary broker start\` standalone, one Node process, --max-old-space-size=${o.heapMb}. Neither is pinned to a CPU.`,
    `- **Flush (\`BENCH_FLUSH=${o.flush}\`).** ${o.flush === 'paper'
      ? 'Both fsync after 10,000 messages or 100 ms, whichever comes first — the paper’s policy and Tributary’s default (Kafka also needs log.flush.scheduler.interval.ms=100, or its time rule never runs). Tributary exposes records on append (log.visible.on.append=true), as Kafka does with one replica (its high watermark moves on append), so consumers on both see a record once written, not once fsynced; acks=1 is answered after the append on both.'
      : 'Both leave fsync to the OS (Kafka’s default; Tributary with its flush thresholds at their maximum), records visible on append.'}`,
    `- **Records.** ${o.records.toLocaleString('en-US')} records of 200 bytes per produce/consume run${o.batch1Records === o.records ? '' : ` (the batch-1 producer run: ${o.batch1Records.toLocaleString('en-US')}, as the Java client sends one request per record)`}, null keys, one partition (except the partition scenario).`,
    '- **Producer.** Java `ProducerPerformance` (Kafka 3.9.1 tools), `acks=1`, `enable.idempotence=false`, `--throughput -1`. Batch 1: `batch.size=1 linger.ms=0` (a batch never takes a second record). Batch 50: `batch.size=10600 linger.ms=10` — a v2 batch of n such records takes 61 + 209·n bytes and the producer’s room check is exact without compression, so 50 fit and 51 do not; the records per batch are counted in the log afterwards (storage table). Its own total line is the figure. ' +
      'librdkafka: `kcat -P -X acks=1` with librdkafka’s default batching, and again at batch 1 (`batch.num.messages=1 linger.ms=0`, the batch-1 record count; the log is checked to hold one record per batch), 200-byte lines on stdin; timed spawn → exit minus kcat’s fixed cost (median 1-record run in the same session). At batch 1 librdkafka keeps up to 1,000,000 requests in flight per connection where the Java producer keeps 5 (max.in.flight.requests.per.connection), so it shows what a broker does with one-record requests.',
    ...(o.scenarios.includes('produce-default') || o.scenarios.includes('produce-idempotence') ? [`- **Idempotent produce (issue #17).** ProducerPerformance with nothing but \`bootstrap.servers\`: the Java producer’s defaults (Kafka 3.9: \`enable.idempotence=true\`, \`acks=all\`, \`batch.size=16384\`, \`linger.ms=0\`, 5 requests in flight), ${o.records.toLocaleString('en-US')} records of 200 bytes, one partition; then the same with \`enable.idempotence=false acks=all\` on a fresh topic, and the ratio idempotent ÷ non-idempotent records/s of each broker (its T ÷ K compares what idempotence costs on Tributary with what it costs on Kafka).`] : []),
    ...(o.scenarios.includes('produce-codecs') ? [`- **Compression.** ProducerPerformance with the batch-50 settings plus \`compression.type=\` ${o.codecs.join(' / ')} (batch.size then bounds the producer’s estimate of the compressed batch, so a batch holds more than 50 records; ProducerPerformance’s payload is random capital letters), and kcat -P default batching with \`compression.codec=lz4\`, ${o.records.toLocaleString('en-US')} records each. Afterwards the log must hold every record in batches of that codec (batch headers walked; librdkafka sends a batch uncompressed when lz4 does not make it smaller, so beside its lz4 batches uncompressed ones may appear, and their share is given) and kcat \`-X check.crcs=true\` must read all of them back (untimed). Kafka decompresses every produced batch to validate its records; Tributary does too from its record validation (issue #16) on.`] : []),
    `- **Consumer.** Both read the batch-50 topic from offset 0 to its end, ${o.fetchBytes.toLocaleString('en-US')} bytes per partition per fetch (\`max.partition.fetch.bytes\`): \`kcat -C -e -f '%o\\n'\` and the Java \`ConsoleConsumer\` in assign mode (\`--partition 0 --offset earliest --max-messages N\`, print.value=false, print.offset=true). Timed from the first to the last chunk of output (start-up and metadata are outside the figure on both).`,
    '- **Storage.** Sum of the topic’s `.log` segment files ÷ records stored, after the batch-1 and batch-50 producer runs (indexes not counted; both brokers keep RecordBatch v2 as sent).',
    `- **End-to-end latency.** Java \`EndToEndLatency\` (${o.latencyMessages.toLocaleString('en-US')} messages, acks=1, 200 bytes): one record at a time, sent then polled; it prints whole milliseconds and is stopped once it has printed its percentiles (the offset commit it does afterwards is not measured; Tributary has no OffsetCommit API yet). ` +
      'Also a probe with Tributary’s TypeScript client on both brokers (microsecond resolution): a long-poll Fetch waits at the next offset, one record is sent, latency = send start → fetch answered (first 5% not counted).',
    `- **Scale, partitions.** ${o.partitionRecords.toLocaleString('en-US')} records produced by ProducerPerformance (batch-50 settings, the default sticky partitioner) into a topic of ${o.partitionCounts.join(' / ')} partitions, then read back by \`kcat -C -e\` from all partitions.`,
    `- **Scale, data in the log.** One partition filled by kcat to ${o.prefillBytes.map(formatSize).join(', then ')} (untimed), then ${o.scaleRecords.toLocaleString('en-US')} records produced (ProducerPerformance batch 50) and those records consumed (kcat from their first offset).`,
    ...(o.profile ? ['- **Profiling.** The Tributary broker ran under `node --cpu-prof` in this run (`--profile`); sampling costs it a little CPU, so its figures here are slightly pessimistic. Kafka ran unprofiled.'] : []),
    ...(o.scenarios.includes('replication') ? [
      `- **Replication (three brokers).** Each system also runs as a 3-broker cluster on this machine, one system at a time, after the single-broker sessions of the round (same alternation). Apache Kafka: KRaft with three combined broker+controller nodes (a 3-voter quorum, ${o.heapMb} MiB heap each) — the lightest layout (three JVMs rather than four with a separate controller), and Tributary’s shape, whose controller is also one of its brokers. Tributary: one ZooKeeper 3.8 (standalone) and three \`tributary broker start --zookeeper\` brokers. ` +
        `Topics: replication factor 3, \`min.insync.replicas=2\`. ${FSYNC_NOTE}. ` +
        `Clients, the same on both: Java \`ProducerPerformance\` with the producer’s default settings (idempotent, \`acks=all\`), \`kcat -P -X acks=all\` (default batching, fixed cost subtracted as above), ${(o.replicationRecords ?? o.records).toLocaleString('en-US')} records each; \`kcat -C\` reading the Java-produced topic; Java \`EndToEndLatency\` with \`acks=all\` (${o.latencyMessages.toLocaleString('en-US')} messages). ` +
        `Failover: a small producer (vs-kafka/failover.ts) sends one-record acks=all writes, one at a time every 20 ms, to the leader the last Metadata named, asking Metadata again after any failure (no client back-off); once the leader has acknowledged its first writes it gets SIGKILL, and the time to the first write acknowledged by another broker is taken; ${o.failovers ?? 1} time(s) per session, each on a fresh topic led by a broker that is not the controller, the broker killed before restarted and back in every broker’s Metadata first; the figure is the session’s median. The killed leader is never the controller (Tributary’s from Metadata, Kafka’s the quorum leader from its \`quorum-state\` file), so on both systems a plain broker dies. ` +
        `Same session timeout on both (${o.sessionTimeoutMs ?? 6000} ms): Tributary’s \`zookeeper.session.timeout.ms\` (ZooKeeper ends the session of a broker it has not heard from for that long; the client pings every third of it) and Kafka’s \`broker.session.timeout.ms\` (the controller fences a broker without a heartbeat for that long) with \`broker.heartbeat.interval.ms\` a third of it. CPU figures there are the three brokers’ together.`,
    ] : []),
    ...(o.scenarios.includes('security') ? [securityMethod(results)] : []),
    ...(o.scenarios.includes('compaction') ? [
      `- **Compaction (issue #34).** A fresh broker of each (\`log.cleaner.backoff.ms=100\`, \`log.cleaner.dedupe.buffer.size\` 128 MiB, Kafka’s default, on both). A keyed data set — ${(o.compactionRecords ?? 0).toLocaleString('en-US')} records, keys K0…K${((o.compactionKeys ?? 1) - 1).toLocaleString('en-US')} drawn by a seeded generator (the same sequence on both), 200-byte values, one record in ten a tombstone — is produced by \`kcat -P -K: -Z\` into a one-partition topic with \`cleanup.policy=compact\`, \`segment.bytes=${(o.compactionSegmentBytes ?? 0).toLocaleString('en-US')}\` and \`min.cleanable.dirty.ratio=1.0\` (never exceeded: no cleaning before the clock starts). ` +
        'Then IncrementalAlterConfigs sets the ratio to 0.01, and the clock runs until the broker’s `cleaner-offset-checkpoint` reaches the active segment’s base offset: **cleaner MB/s** = bytes of the closed segments ÷ that time (each cleaner’s own account — Kafka’s “MB of log processed” line, Tributary’s `cleaned log` lines — is in the details). **Peak RSS** is the broker process’s VmHWM, reset through `/proc/<pid>/clear_refs` just before (the RSS before cleaning is in the details). ' +
        `**Beside the cleaner**: ProducerPerformance (batch-50 settings) then kcat -C of ${(o.compactionPassRecords ?? 0).toLocaleString('en-US')} records on a plain topic, once with the cleaner idle and once right after a second copy of the data set was made cleanable; the figures are busy ÷ idle records/s on each broker (goal ≥ 0.9×), with the share of the busy pass during which the cleaner was still running.`,
    ] : []),
    `- **Warm-up.** ${o.warmupRecords > 0 ? `${o.warmupRecords.toLocaleString('en-US')} records produced and consumed, untimed, after each broker start.` : 'none in this run.'}`,
    '- **Broker CPU.** For each throughput figure the per-run details give the broker process’s CPU time (user + system, all threads, from /proc/<pid>/stat) over the client run, per million records. Clients and broker share the 2 cores, so CPU the broker spends is CPU the client does not get.',
    '- **Figures.** min / median / max over the rounds for each broker; the ratio is Tributary ÷ Kafka of the medians (and of each round’s pair). For latency and bytes per message lower is better, so a ratio above 1 means Tributary is behind there.',
    '',
  );
  out.push('Broker settings beyond the defaults:', '');
  out.push(...mdTable([['broker', 'settings'], ...Object.entries(results.settings).map(([name, s]) => [name, Object.entries(s).map(([k, v]) => `\`${k}=${v}\``).join(', ') || '(defaults)'])]), '');
  if (results.replicationSettings !== undefined) {
    out.push('Settings of every broker of the 3-broker clusters (replication scenario), beyond the defaults and the listeners / node ids / quorum voters:', '');
    out.push(...mdTable([['cluster', 'settings'], ...Object.entries(results.replicationSettings).map(([name, s]) => [name, Object.entries(s).map(([k, v]) => `\`${k}=${v}\``).join(', ') || '(defaults)'])]), '');
  }

  if (results.compactionSettings !== undefined) {
    out.push('Settings of the compaction scenario’s brokers beyond those:', '');
    out.push(...mdTable([['broker', 'settings'], ...Object.entries(results.compactionSettings).map(([name, s]) => [name, Object.entries(s).map(([k, v]) => `\`${k}=${v}\``).join(', ')])]), '');
  }
  if (results.securitySettings !== undefined) {
    out.push('Settings of the security scenario’s brokers beyond those (no secret listed):', '');
    out.push(...mdTable([['broker', 'settings'], ...Object.entries(results.securitySettings).map(([name, s]) => [name, Object.entries(s).map(([k, v]) => `\`${k}=${v}\``).join(', ')])]), '');
  }

  out.push('## Results', '');
  for (const chart of CHARTS) {
    const figures = results.figures.filter((f) => f.chart === chart.id);
    if (figures.length === 0) continue;
    out.push(`### ${chart.title}`, '', ...figureRows(figures), '');
    const file = chartFiles.get(chart.id);
    if (file !== undefined) out.push(`![${chart.title}](${file})`, '');
    const details = detailRows(figures);
    if (details.length > 0) out.push('<details><summary>Per-run details</summary>', '', ...details, '', '</details>', '');
  }
  const ratios = chartFiles.get('ratios');
  if (ratios !== undefined) out.push('### All ratios', '', `![Tributary ÷ Kafka, every figure](${ratios})`, '');

  out.push('## Targets of issue #6', '');
  if (results.reduced.length > 0) out.push(`*From this reduced run${loaded(results) ? ' on a loaded machine' : ''}.*`, '');
  out.push(...mdTable([['target', 'this run'], ...TARGETS.map((t) => [t.what, t.check(results)])]), '');

  if (results.profile !== undefined) {
    const p = results.profile;
    out.push('## Where the Tributary broker spends its CPU', '');
    out.push(`\`--profile\` ran the Tributary broker under \`node --cpu-prof\` (${p.files.length} profile(s), ${p.sampledSeconds} s sampled over all its scenarios; idle time left out). Self time:`, '');
    out.push(...mdTable([['function', 'where', 'self %', 'mostly called from'], ...p.topFunctions.map((f) => [`\`${f.name}\``, f.where, f.selfPercent.toFixed(1), f.calledFrom ?? ''])]), '');
    out.push('Each broker start leaves two profiles (the main thread and the loader thread tsx uses to compile the TypeScript sources); the module-loading entries are that start-up cost.', '');
    out.push('By file or category:', '', ...mdTable([['file', 'self %'], ...p.topFiles.map((f) => [f.file, f.selfPercent.toFixed(1)])]), '');
  }
  if (results.notes.length > 0) out.push('## Notes', '', ...results.notes.map((n) => `- ${n}`), '');
  return `${out.join('\n')}\n`;
}
