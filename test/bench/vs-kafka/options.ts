/**
 * Knobs of `npm run bench:vs-kafka` (environment variables, plus `--smoke` and `--profile` flags).
 * The defaults are the full run (10 million records, 3 rounds, 1 GB and 10 GB pre-filled,
 * 1/10/100/1000 partitions), meant for a quiet machine and taking hours; `--smoke` (or
 * BENCH_SMOKE=1) shrinks everything so the script is exercised end to end in a few minutes and
 * writes its results only into the run folder, never into docs/.
 *
 * BENCH_TRIBUTARY_DIR names another Tributary checkout (a `git worktree` of an older commit, with
 * node_modules linked in) whose `bin/tributary.js` is started as the Tributary broker, while the
 * clients, the checks and the report stay this checkout's: "before" and "after" of a broker change
 * are measured by the same bench code. Such a run writes its results under $TMPDIR (never into
 * this checkout's docs/) unless BENCH_OUT says where.
 */
import { existsSync, realpathSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The checkout this benchmark code lives in (its broker is the default one under test). */
export const THIS_CHECKOUT = realpathSync(join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..'));

export const SCENARIOS = [
  'produce-b1', 'produce-b50', 'produce-default', 'produce-idempotence', 'produce-kcat', 'produce-codecs', 'consume-kcat', 'consume-java', 'consume-group', 'rebalance', 'storage', 'latency', 'partitions', 'prefill',
  'replication', 'security', 'compaction',
] as const;
export type ScenarioName = (typeof SCENARIOS)[number];

/** Scenarios run on three brokers of each system (vs-kafka/cluster.ts) instead of one. */
export const CLUSTER_SCENARIOS: readonly ScenarioName[] = ['replication'];

/**
 * Scenarios with a broker session of their own, started differently: `security` runs on a single
 * broker of each system with a SASL_SSL listener beside the PLAINTEXT one (vs-kafka/security.ts);
 * `compaction` on a fresh single broker with a short cleaner back-off (vs-kafka/compaction.ts), so
 * its RSS and cleaner figures owe nothing to the other scenarios' data.
 */
export const OWN_SESSION_SCENARIOS: readonly ScenarioName[] = [...CLUSTER_SCENARIOS, 'security', 'compaction'];

/** Whether the run needs the single-broker sessions at all. */
export function needsSingleBroker(options: Pick<BenchOptions, 'scenarios'>): boolean {
  return options.scenarios.some((s) => !OWN_SESSION_SCENARIOS.includes(s));
}

/** Kafka's codecs (compression.type of the Java producer, compression.codec of librdkafka). */
export const CODECS = ['gzip', 'snappy', 'lz4', 'zstd'] as const;
export type Codec = (typeof CODECS)[number];

export interface BenchOptions {
  readonly smoke: boolean;
  /** Records per produce/consume run (the paper: 10 million). */
  readonly records: number;
  /** Records of the batch-1 producer run (BENCH_B1_RECORDS): the Java client sends one request per record. */
  readonly batch1Records: number;
  readonly rounds: number;
  readonly scenarios: readonly ScenarioName[];
  /** Records of the untimed warm-up of each broker start (0 = none). */
  readonly warmupRecords: number;
  /** Messages of each end-to-end latency run. */
  readonly latencyMessages: number;
  readonly partitionCounts: readonly number[];
  /** Codecs of the produce-codecs scenario (BENCH_CODECS, default gzip,lz4,zstd), each at `records` records. */
  readonly codecs: readonly Codec[];
  /** Records produced (and consumed) per partition-count run, spread over all partitions. */
  readonly partitionRecords: number;
  /** Log sizes (bytes) to pre-fill before measuring, ascending. */
  readonly prefillBytes: readonly number[];
  /** Records produced then consumed at each pre-filled size. */
  readonly scaleRecords: number;
  /** Records of the storage measurement when the produce scenarios did not run. */
  readonly storageRecords: number;
  /** Records per produce/consume run of the replication scenario (BENCH_REPLICATION_RECORDS; default `records`). */
  readonly replicationRecords: number;
  /**
   * The replication scenario's dead-broker detection on both systems (BENCH_SESSION_TIMEOUT_MS,
   * default 6000, 3000 in smoke mode): Tributary's zookeeper.session.timeout.ms, Kafka's
   * broker.session.timeout.ms (with broker.heartbeat.interval.ms a third of it).
   */
  readonly sessionTimeoutMs: number;
  /** Leader kills per replication session (BENCH_FAILOVERS; default 3, 1 in smoke mode); the figure is their median. */
  readonly failovers: number;
  /** Keyed records of the compaction scenario's data set (BENCH_COMPACTION_RECORDS; default 10 million). */
  readonly compactionRecords: number;
  /** Distinct keys of that data set (BENCH_COMPACTION_KEYS; default 1 million); a tenth of the records are tombstones. */
  readonly compactionKeys: number;
  /**
   * segment.bytes of the compacted topics (BENCH_COMPACTION_SEGMENT_BYTES; default 64 MiB, 2 MiB in
   * smoke mode; at least 1 MiB, as Kafka refuses batches larger than it and kcat's reach 1 MB).
   */
  readonly compactionSegmentBytes: number;
  /** Records of each produce + fetch pass beside the cleaner (BENCH_COMPACTION_PASS_RECORDS; default 1 million). */
  readonly compactionPassRecords: number;
  readonly flush: 'paper' | 'os';
  readonly heapMb: number;
  /** Bytes per partition per fetch for both consumers (~200 KB, the paper's consumer test). */
  readonly fetchBytes: number;
  readonly profile: boolean;
  /**
   * Where results.json, benchmarks.md and the charts go; undefined = docs/ (full and reduced runs
   * of this checkout's broker) or a folder under $TMPDIR (smoke, or another checkout's broker).
   */
  readonly outDir: string | undefined;
  /** Keep the run folder (broker data and logs) after the run. */
  readonly keep: boolean;
  /** Parent of the run folder (the brokers' disk); default os.tmpdir(). */
  readonly baseDir: string | undefined;
  /** The Tributary checkout whose bin/tributary.js is the broker under test (BENCH_TRIBUTARY_DIR; default THIS_CHECKOUT), a real path. */
  readonly tributaryDir: string;
}

export const FULL: Pick<BenchOptions, 'records' | 'rounds' | 'prefillBytes' | 'partitionCounts' | 'latencyMessages' | 'codecs' | 'sessionTimeoutMs' | 'failovers'
  | 'compactionRecords' | 'compactionKeys' | 'compactionPassRecords'> = {
  records: 10_000_000,
  compactionRecords: 10_000_000,
  compactionKeys: 1_000_000,
  compactionPassRecords: 1_000_000,
  sessionTimeoutMs: 6000,
  failovers: 3,
  codecs: ['gzip', 'lz4', 'zstd'],
  rounds: 3,
  prefillBytes: [1e9, 10e9],
  partitionCounts: [1, 10, 100, 1000],
  latencyMessages: 10_000,
};

function envInt(name: string, fallback: number, min = 1): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw.replace(/_/g, ''));
  if (!Number.isInteger(value) || value < min) throw new Error(`${name} must be an integer ≥ ${min}, not "${raw}"`);
  return value;
}

/** "1GB,10GB", "512MB", "2e9": decimal units (GB = 10^9 bytes). */
export function parseSizes(text: string): number[] {
  const units: Record<string, number> = { '': 1, b: 1, kb: 1e3, mb: 1e6, gb: 1e9, kib: 1024, mib: 1024 ** 2, gib: 1024 ** 3 };
  return text.split(',').map((part) => part.trim()).filter((part) => part !== '').map((part) => {
    const match = /^([\d.e+]+)\s*([a-z]*)$/i.exec(part);
    const unit = units[(match?.[2] ?? '').toLowerCase()];
    const value = match === null || unit === undefined ? NaN : Number(match[1]) * unit;
    if (!Number.isFinite(value) || value <= 0) throw new Error(`bad size "${part}" (e.g. 1GB, 512MB)`);
    return Math.round(value);
  }).sort((a, b) => a - b);
}

export function formatSize(bytes: number): string {
  if (bytes >= 1e9) return `${+(bytes / 1e9).toFixed(2)} GB`;
  if (bytes >= 1e6) return `${+(bytes / 1e6).toFixed(2)} MB`;
  return `${+(bytes / 1e3).toFixed(2)} kB`;
}

export function parseOptions(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): BenchOptions {
  for (const arg of argv) if (!['--smoke', '--profile'].includes(arg)) throw new Error(`unknown argument ${arg} (known: --smoke, --profile; the rest are BENCH_* variables)`);
  const smoke = argv.includes('--smoke') || env['BENCH_SMOKE'] === '1';
  const records = envInt('BENCH_RECORDS', smoke ? 3_000 : FULL.records);
  const requested = (env['BENCH_SCENARIOS'] ?? '').split(',').map((s) => s.trim()).filter((s) => s !== '');
  for (const name of requested) if (!(SCENARIOS as readonly string[]).includes(name)) throw new Error(`unknown scenario ${name}; known: ${SCENARIOS.join(', ')}`);
  const flush = env['BENCH_FLUSH'] ?? 'paper';
  if (flush !== 'paper' && flush !== 'os') throw new Error(`BENCH_FLUSH must be paper or os, not ${flush}`);
  const partitionCounts = (env['BENCH_PARTITIONS'] ?? (smoke ? '1,10' : FULL.partitionCounts.join(','))).split(',').map((p) => {
    const n = Number(p.trim());
    if (!Number.isInteger(n) || n < 1) throw new Error(`BENCH_PARTITIONS: bad partition count "${p}"`);
    return n;
  });
  const codecs = (env['BENCH_CODECS'] ?? FULL.codecs.join(',')).split(',').map((c) => c.trim()).filter((c) => c !== '').map((c) => {
    if (!(CODECS as readonly string[]).includes(c)) throw new Error(`BENCH_CODECS: unknown codec "${c}"; known: ${CODECS.join(', ')}`);
    return c as Codec;
  });
  if (codecs.length === 0) throw new Error('BENCH_CODECS names no codec');
  return {
    smoke,
    records,
    rounds: envInt('BENCH_ROUNDS', smoke ? 1 : FULL.rounds),
    scenarios: requested.length === 0 ? SCENARIOS : SCENARIOS.filter((s) => requested.includes(s)),
    warmupRecords: envInt('BENCH_WARMUP_RECORDS', smoke ? 0 : Math.min(500_000, Math.max(20_000, Math.floor(records / 20))), 0),
    latencyMessages: envInt('BENCH_LATENCY_MESSAGES', smoke ? 100 : FULL.latencyMessages),
    partitionCounts,
    codecs,
    partitionRecords: envInt('BENCH_PARTITION_RECORDS', smoke ? 1_000 : Math.min(records, 1_000_000)),
    prefillBytes: parseSizes(env['BENCH_PREFILL'] ?? (smoke ? '1MB,2MB' : '1GB,10GB')),
    scaleRecords: envInt('BENCH_SCALE_RECORDS', smoke ? 1_000 : Math.min(records, 1_000_000)),
    batch1Records: envInt('BENCH_B1_RECORDS', records),
    storageRecords: envInt('BENCH_STORAGE_RECORDS', Math.min(records, 200_000)),
    replicationRecords: envInt('BENCH_REPLICATION_RECORDS', records),
    // Smoke: 3 s (heartbeats / pings every second) keeps the two failovers of a smoke run short.
    sessionTimeoutMs: envInt('BENCH_SESSION_TIMEOUT_MS', smoke ? 3000 : FULL.sessionTimeoutMs, 1000),
    failovers: envInt('BENCH_FAILOVERS', smoke ? 1 : FULL.failovers),
    compactionRecords: envInt('BENCH_COMPACTION_RECORDS', smoke ? 50_000 : FULL.compactionRecords),
    compactionKeys: envInt('BENCH_COMPACTION_KEYS', smoke ? 2_000 : FULL.compactionKeys),
    compactionSegmentBytes: envInt('BENCH_COMPACTION_SEGMENT_BYTES', smoke ? 2 * 1024 * 1024 : 64 * 1024 * 1024, 1024 * 1024),
    compactionPassRecords: envInt('BENCH_COMPACTION_PASS_RECORDS', smoke ? 5_000 : FULL.compactionPassRecords),
    flush,
    heapMb: envInt('BENCH_HEAP_MB', 1024),
    fetchBytes: envInt('BENCH_FETCH_BYTES', 204_800),
    profile: argv.includes('--profile') || env['BENCH_PROFILE'] === '1',
    outDir: env['BENCH_OUT'] === undefined || env['BENCH_OUT'] === '' ? undefined : env['BENCH_OUT'],
    keep: env['BENCH_KEEP'] === '1',
    baseDir: env['BENCH_DIR'] === undefined || env['BENCH_DIR'] === '' ? undefined : env['BENCH_DIR'],
    tributaryDir: tributaryCheckout(env['BENCH_TRIBUTARY_DIR']),
  };
}

/** BENCH_TRIBUTARY_DIR as a real path, checked to hold a runnable broker (bin/tributary.js and tsx in node_modules). */
function tributaryCheckout(raw: string | undefined): string {
  if (raw === undefined || raw === '') return THIS_CHECKOUT;
  const dir = resolve(raw);
  if (!existsSync(join(dir, 'bin', 'tributary.js'))) throw new Error(`BENCH_TRIBUTARY_DIR=${raw}: no bin/tributary.js there (a Tributary checkout, e.g. git worktree add <dir> <commit>)`);
  if (!existsSync(join(dir, 'node_modules', 'tsx'))) {
    throw new Error(`BENCH_TRIBUTARY_DIR=${raw}: no node_modules/tsx there; link this checkout's in: ln -s ${join(THIS_CHECKOUT, 'node_modules')} ${join(dir, 'node_modules')}`);
  }
  return realpathSync(dir);
}

/** Why a run is not the full run (empty = full). */
export function reductions(options: BenchOptions): string[] {
  const reasons: string[] = [];
  if (options.smoke) reasons.push('smoke mode (tiny sizes, only to check the script)');
  if (options.records < FULL.records) reasons.push(`${options.records.toLocaleString('en-US')} records per run instead of ${FULL.records.toLocaleString('en-US')}`);
  if (options.scenarios.includes('produce-b1') && options.batch1Records < Math.min(options.records, FULL.records)) {
    reasons.push(`${options.batch1Records.toLocaleString('en-US')} records in the batch-1 producer run instead of ${Math.min(options.records, FULL.records).toLocaleString('en-US')}`);
  }
  if (options.rounds < FULL.rounds) reasons.push(`${options.rounds} round(s) instead of ${FULL.rounds}`);
  const missing = SCENARIOS.filter((s) => !options.scenarios.includes(s));
  if (missing.length > 0) reasons.push(`scenarios left out: ${missing.join(', ')}`);
  if (options.scenarios.includes('prefill') && Math.max(...options.prefillBytes) < Math.max(...FULL.prefillBytes)) {
    reasons.push(`pre-filled logs of ${options.prefillBytes.map(formatSize).join(', ')} instead of ${FULL.prefillBytes.map(formatSize).join(', ')}`);
  }
  if (options.scenarios.includes('partitions') && Math.max(...options.partitionCounts) < Math.max(...FULL.partitionCounts)) {
    reasons.push(`partition counts ${options.partitionCounts.join('/')} instead of ${FULL.partitionCounts.join('/')}`);
  }
  const codecsLeftOut = FULL.codecs.filter((c) => !options.codecs.includes(c));
  if (options.scenarios.includes('produce-codecs') && codecsLeftOut.length > 0) reasons.push(`codecs left out: ${codecsLeftOut.join(', ')}`);
  if (options.scenarios.includes('replication')) {
    if (options.replicationRecords < Math.min(options.records, FULL.records)) reasons.push(`${options.replicationRecords.toLocaleString('en-US')} records per replication produce/consume run instead of ${Math.min(options.records, FULL.records).toLocaleString('en-US')}`);
    if (options.failovers < FULL.failovers) reasons.push(`${options.failovers} leader kill(s) per replication session instead of ${FULL.failovers}`);
    if (options.sessionTimeoutMs !== FULL.sessionTimeoutMs) reasons.push(`session timeout ${options.sessionTimeoutMs} ms instead of ${FULL.sessionTimeoutMs} ms in the replication scenario`);
  }
  if (options.scenarios.includes('compaction')) {
    if (options.compactionRecords < FULL.compactionRecords) reasons.push(`${options.compactionRecords.toLocaleString('en-US')} keyed records in the compaction data set instead of ${FULL.compactionRecords.toLocaleString('en-US')}`);
    if (options.compactionKeys !== FULL.compactionKeys) reasons.push(`${options.compactionKeys.toLocaleString('en-US')} distinct keys in the compaction data set instead of ${FULL.compactionKeys.toLocaleString('en-US')}`);
    if (options.compactionPassRecords < FULL.compactionPassRecords) reasons.push(`${options.compactionPassRecords.toLocaleString('en-US')} records per produce/fetch pass beside the cleaner instead of ${FULL.compactionPassRecords.toLocaleString('en-US')}`);
  }
  if ((options.scenarios.includes('latency') || options.scenarios.includes('replication')) && options.latencyMessages < FULL.latencyMessages) {
    reasons.push(`${options.latencyMessages} latency messages instead of ${FULL.latencyMessages}`);
  }
  return reasons;
}
