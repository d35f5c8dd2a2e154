/**
 * `npm run chaos -- fuzz [--frames N] [--seed N] [--sasl-share F]`: protocol fuzzing of a broker
 * process (issue #22, hostile input; reliability reference §8.5 H1–H5). One `tributary broker
 * start` process with a PLAINTEXT, a SASL_PLAINTEXT and a SASL_SSL listener and a SCRAM user, and
 * two storms at once:
 *
 *   plaintext  the storm of test/support/fuzz-storm.ts: frames of every class of the seeded
 *              generator (random bodies and streams, mutated requests of every served API and
 *              version, lying size prefixes, unknown keys and versions, corrupt and inner-damaged
 *              record batches of every codec, and the `captured` class: requests kcat, kafkajs and
 *              the Java tools sent, replayed and mutated), each predicted by the protocol layer's
 *              own decoders and the record validator; answers checked as they come
 *   sasl       the storm of test/support/fuzz-sasl.ts: captured SCRAM and PLAIN conversations,
 *              mutated, over SASL_PLAINTEXT and SASL_SSL
 *
 * Afterwards every partition the storm wrote is read end to end by kcat with check.crcs=true, the
 * broker is stopped, and every stored batch in its data dir is verified (fuzz-storm.ts
 * `verifyStoredLogs`: each one acceptable, each acknowledged one byte for byte at its offset).
 *
 * Figures: frames sent per class, connections, broker crashes (must be 0), peak broker RSS, wrong
 * answers (must be 0), bad data stored (must be 0). A full run (the default frame count, or
 * --docs) writes its table into docs/reliability.md between its markers.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { KafkaConnection } from '../../src/client/connection.js';
import { CreateTopicsApi } from '../../src/protocol/apis/create-topics.js';
import { ProduceApi } from '../../src/protocol/apis/produce.js';
import { encodeRecordBatch } from '../../src/protocol/records.js';
import { freePort, LOOPBACK } from '../services/network.js';
import { loadBatchValidation, referenceValidation } from '../support/batch-rules.js';
import { startBrokerProcess } from '../support/brokers.js';
import { testCertificates } from '../support/certificates.js';
import { CAPTURE_PASSWORD, CAPTURE_USER, loadCapturedCorpus, saslConversations, seedFrames } from '../support/fuzz-captured.js';
import { FUZZ_GROUP_SETTINGS, batchDigest, type BatchPrediction } from '../support/fuzz-frames.js';
import { SaslStorm, type SaslStormResult } from '../support/fuzz-sasl.js';
import { accountForAppends, MAX_BATCH_BYTES, runStorm, Storm, StormLedger, STORM_TOPICS, storedLogsIn, tp, verifyStoredLogs } from '../support/fuzz-storm.js';
import { kcat } from '../support/kcat.js';
import { peakResidentBytes, residentBytes, resetPeakResident } from '../support/process-memory.js';
import { escapeCell, gitCommit, machineFacts, megabytes, positiveInteger, RELIABILITY_DOC, updateMarkedBlock } from './report.js';
import type { ChaosContext } from './run.js';

export const FUZZ_TABLE = {
  start: '<!-- chaos:fuzz:start (written by `npm run chaos -- fuzz`; edit the prose around it, not this) -->',
  end: '<!-- chaos:fuzz:end -->',
  heading: 'Hostile input: protocol fuzzing',
} as const;

const FULL_FRAMES = 1_000_000;
const DEFAULT_SEED = 0x5eed_2022;
const SETUP_RECORDS = 3;
/** SASL conversations at once: TLS handshakes and SCRAM are dear, and the two storms share the machine. */
const SASL_CONCURRENCY = 3;
const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

export async function runFuzzChaos(args: readonly string[], context: ChaosContext): Promise<boolean> {
  const { values } = parseArgs({
    args: [...args],
    options: { frames: { type: 'string' }, seed: { type: 'string' }, 'sasl-share': { type: 'string' }, docs: { type: 'boolean' }, 'no-docs': { type: 'boolean' } },
    strict: true,
  });
  const frames = values.frames === undefined ? FULL_FRAMES : positiveInteger('--frames', values.frames);
  const seed = values.seed === undefined ? DEFAULT_SEED : positiveInteger('--seed', values.seed);
  const saslShare = values['sasl-share'] === undefined ? 0.05 : Number(values['sasl-share']);
  if (!(saslShare >= 0 && saslShare < 1)) throw new Error('--sasl-share must be in [0, 1)');
  const writeDocs = values['no-docs'] === true ? false : values.docs === true || frames >= FULL_FRAMES;
  const say = context.say;
  const startedAt = new Date();
  const loadAtStart = loadavg();

  const corpus = loadCapturedCorpus();
  const loaded = await loadBatchValidation();
  const prediction: BatchPrediction = {
    validation: loaded.validation,
    rules: { maxBatchBytes: MAX_BATCH_BYTES, timestampType: 'CreateTime', timestampBeforeMaxMs: Infinity, timestampAfterMaxMs: 3_600_000 },
    reference: referenceValidation,
  };
  const certificates = testCertificates();
  const [port, saslPort, sslPort] = [await freePort(), await freePort(), await freePort()];
  const dataDir = join(context.run.dir, `broker-1-${port}`, 'data');
  // The SCRAM user the captured clients logged in as, in the standalone coordination store, before the broker reads it.
  mkdirSync(dataDir, { recursive: true });
  execFileSync(process.execPath, [join(root, 'bin', 'tributary.js'), 'users', 'add', CAPTURE_USER, '--data-dir', dataDir, '--mechanism', 'SCRAM-SHA-512', '--mechanism', 'SCRAM-SHA-256', '--password-stdin'], { input: CAPTURE_PASSWORD, cwd: root });
  const broker = await startBrokerProcess({
    run: context.run,
    id: 1,
    port,
    settings: {
      listeners: `PLAINTEXT://${LOOPBACK}:${port},SASL_PLAINTEXT://${LOOPBACK}:${saslPort},SASL_SSL://${LOOPBACK}:${sslPort}`,
      'ssl.keystore.location': certificates.broker,
      'ssl.truststore.location': certificates.ca,
      'log.visible.on.append': 'true',
      ...FUZZ_GROUP_SETTINGS,
    },
  });
  const pid = broker.daemon.pid;
  say(`fuzz chaos: ${frames.toLocaleString('en')} frames (${Math.round(saslShare * 100)}% to the SASL listeners), seed ${seed}, corpus of ${corpus.frames.length} captured frames from ${corpus.clients.length} client runs; broker pid ${pid}, log ${broker.logFile}`);

  const ledger = new StormLedger();
  const connection = await KafkaConnection.open(LOOPBACK, port, { requestTimeoutMs: 30_000 });
  try {
    const created = await connection.request(CreateTopicsApi, 4, { topics: STORM_TOPICS.map((topic) => ({ name: topic.name, numPartitions: topic.partitions, replicationFactor: 1, assignments: [], configs: [] })), timeoutMs: 30_000, validateOnly: false });
    if (created.topics.some((topic) => topic.errorCode !== 0)) throw new Error(`CreateTopics: ${JSON.stringify(created.topics)}`);
    for (const topic of STORM_TOPICS) {
      for (let partition = 0; partition < topic.partitions; partition += 1) {
        const batch = encodeRecordBatch(Array.from({ length: SETUP_RECORDS }, (_, i) => ({ key: Buffer.from(`k${i}`), value: Buffer.from(`setup ${topic.name}-${partition} #${i}`), timestamp: 1_700_000_000_000 + i })));
        const answer = await connection.request(ProduceApi, 8, { transactionalId: null, acks: -1, timeoutMs: 30_000, topicData: [{ name: topic.name, partitionData: [{ index: partition, records: batch }] }] });
        const result = answer.responses[0]?.partitionResponses[0];
        if (result?.errorCode !== 0 || result.baseOffset !== 0n) throw new Error(`setup produce to ${topic.name}-${partition}: ${JSON.stringify(result, (_, v: unknown) => (typeof v === 'bigint' ? String(v) : v))}`);
        const key = tp(topic.name, partition);
        ledger.acceptable.add(batchDigest(batch));
        ledger.acknowledgedBatches.push({ key, baseOffset: 0, digest: batchDigest(batch) });
        ledger.acknowledgedAt.set(`${key}@0`, batchDigest(batch));
        ledger.setupRecords.set(key, SETUP_RECORDS);
      }
    }
  } finally {
    connection.close();
  }

  const rssBefore = residentBytes(pid);
  const exactPeak = resetPeakResident(pid);
  let peakRss = rssBefore;
  const saslFrames = Math.round(frames * saslShare);
  const storm = new Storm({ seed, target: frames - saslFrames, prediction, captured: seedFrames(corpus) }, ledger);
  const sasl = new SaslStorm({ seed: seed + 1, target: saslFrames, conversations: saslConversations(corpus), prediction, user: CAPTURE_USER, password: CAPTURE_PASSWORD, saslPlaintextPort: saslPort, saslSslPort: sslPort, ca: certificates.ca, storm, concurrency: SASL_CONCURRENCY });
  let crashes = 0;
  const started = Date.now();
  let lastReport = started;
  const watch = setInterval(() => {
    peakRss = Math.max(peakRss, residentBytes(pid));
    if (broker.daemon.hasExited() && crashes === 0) {
      crashes += 1;
      say(`  the broker process exited during the storm: ${broker.logFile}`);
      storm.stop();
      sasl.stop();
    }
    if (Date.now() - lastReport >= 60_000) {
      lastReport = Date.now();
      say(`  … ${Math.round((Date.now() - started) / 1000)} s: plaintext ${storm.writes.toLocaleString('en')} frames on ${storm.connections.toLocaleString('en')} connections, sasl ${sasl.result.frames.toLocaleString('en')} frames, broker RSS ${megabytes(residentBytes(pid))}`);
    }
  }, 200);
  try {
    await Promise.all([runStorm(storm, port), sasl.run()]);
  } finally {
    clearInterval(watch);
  }
  const stormSeconds = Math.round((Date.now() - started) / 1000);
  peakRss = Math.max(peakRss, exactPeak ? peakResidentBytes(pid) : 0);

  // Every partition of the storm's topics is read end to end by kcat, checking CRCs.
  const kcatRead = new Map<string, number>();
  const problems: string[] = [];
  if (crashes === 0) {
    for (const topic of STORM_TOPICS) {
      for (let partition = 0; partition < topic.partitions; partition += 1) {
        const result = await kcat(['-b', broker.bootstrap, '-X', 'check.crcs=true', '-C', '-t', topic.name, '-p', String(partition), '-o', 'beginning', '-e', '-q', '-f', '%o\n'], undefined, 120_000).catch((error: unknown) => ({ status: null, stdout: '', stderr: String(error) }));
        const offsets = result.stdout.split('\n').filter((line) => line !== '').map(Number);
        if (result.status !== 0 || result.stderr.trim() !== '') problems.push(`kcat could not read ${topic.name}-${partition}: ${result.stderr.slice(0, 300)}`);
        if (!offsets.every((offset, i) => offset === i)) problems.push(`kcat read ${topic.name}-${partition} with gaps`);
        kcatRead.set(tp(topic.name, partition), offsets.length);
      }
    }
  }
  const exit = await broker.stop();
  if (crashes === 0 && exit !== 0) problems.push(`the broker exited ${String(exit)} on SIGTERM`);
  const errorLines = readFileSync(broker.logFile, 'utf8')
    .split('\n')
    .filter((line) => /"level":(50|60)\b/.test(line));

  const stored = await verifyStoredLogs(storedLogsIn(dataDir), ledger, prediction, loaded.validation);
  const unaccounted = accountForAppends(storm, stored);
  for (const [key, read] of kcatRead) {
    const end = stored.logEndOffsets.get(key);
    if (end !== read) problems.push(`kcat read ${read} records of ${key}, the log holds ${String(end)}`);
  }
  const badData = [...stored.problems, ...unaccounted];
  const wrong = [...storm.anomalies.map((anomaly) => `${anomaly.what} [${anomaly.category}/${anomaly.kind}] ${anomaly.detail.slice(0, 300)} frame ${anomaly.frame.slice(0, 300)}`), ...sasl.result.anomalies];

  const processed = Object.fromEntries([...storm.processed].filter(([, count]) => count > 0));
  const result: FuzzResult = {
    frames: storm.writes + sasl.result.frames,
    plaintext: { writes: storm.writes, processed, connections: storm.connections, closedByBroker: storm.closedByBroker, responses: storm.responses, acknowledgedBatches: ledger.acknowledgedBatches.length, duplicates: storm.duplicates, skipped: Object.fromEntries(storm.skipped) },
    sasl: sasl.result,
    crashes,
    rssBeforeBytes: rssBefore,
    peakRssBytes: peakRss,
    wrongAnswers: wrong.length,
    badData: badData.length,
    otherProblems: [...problems, ...errorLines.slice(0, 5).map((line) => `broker error log: ${line.slice(0, 300)}`)],
    storedBatches: stored.batches,
    storedBytes: stored.bytes,
    seconds: stormSeconds,
    seed,
  };
  say(formatFuzzLine(result));
  say(`  plaintext frames per class: ${JSON.stringify(processed)}; probes ${storm.probes}, abandoned long polls ${storm.givenUp}, resent ${storm.resends}`);
  say(`  sasl: ${JSON.stringify({ ...sasl.result, anomalies: sasl.result.anomalies.length })}`);
  for (const line of [...wrong.slice(0, 10), ...badData.slice(0, 10), ...result.otherProblems.slice(0, 10)]) say(`  violation: ${line}`);
  const ok = crashes === 0 && wrong.length === 0 && badData.length === 0 && result.otherProblems.length === 0 && errorLines.length === 0;
  if (writeDocs) {
    const facts = `Run ${startedAt.toISOString().slice(0, 16).replace('T', ' ')}–${new Date().toISOString().slice(11, 16)} UTC at commit \`${gitCommit()}\`, seed ${seed}, ${frames >= FULL_FRAMES ? 'full count' : `reduced count (${frames.toLocaleString('en')} of ${FULL_FRAMES.toLocaleString('en')} frames)`}, ${machineFacts(loadAtStart, loadavg())}.`;
    updateMarkedBlock(RELIABILITY_DOC, FUZZ_TABLE, `${facts}\n\n${formatFuzzTable(result)}`);
    say(`results table written to ${RELIABILITY_DOC}`);
  }
  return ok;
}

interface FuzzResult {
  readonly frames: number;
  readonly plaintext: {
    readonly writes: number;
    readonly processed: Record<string, number>;
    readonly connections: number;
    readonly closedByBroker: number;
    readonly responses: number;
    readonly acknowledgedBatches: number;
    readonly duplicates: number;
    readonly skipped: Record<string, number>;
  };
  readonly sasl: SaslStormResult;
  readonly crashes: number;
  readonly rssBeforeBytes: number;
  readonly peakRssBytes: number;
  readonly wrongAnswers: number;
  readonly badData: number;
  readonly otherProblems: readonly string[];
  readonly storedBatches: number;
  readonly storedBytes: number;
  readonly seconds: number;
  readonly seed: number;
}

function formatFuzzLine(result: FuzzResult): string {
  return (
    `fuzz: ${result.frames.toLocaleString('en')} frames (plaintext ${result.plaintext.writes.toLocaleString('en')}, sasl ${result.sasl.frames.toLocaleString('en')}) on ` +
    `${(result.plaintext.connections + result.sasl.connections).toLocaleString('en')} connections in ${result.seconds} s; broker crashes ${result.crashes}; ` +
    `peak broker RSS ${megabytes(result.peakRssBytes)} (+${megabytes(result.peakRssBytes - result.rssBeforeBytes)}); wrong answers ${result.wrongAnswers}; bad data stored ${result.badData}; ` +
    `${result.plaintext.acknowledgedBatches.toLocaleString('en')} acknowledged batches, ${result.storedBatches.toLocaleString('en')} stored batches verified`
  );
}

function formatFuzzTable(result: FuzzResult): string {
  const verdict = result.crashes === 0 && result.wrongAnswers === 0 && result.badData === 0 && result.otherProblems.length === 0 ? 'pass' : `**FAIL** (${escapeCell(result.otherProblems.slice(0, 2).join('; ') || 'see the run output')})`;
  const classes = Object.entries(result.plaintext.processed)
    .map(([name, count]) => `${name} ${count.toLocaleString('en')}`)
    .join(', ');
  const rows = [
    '| listener | frames sent | connections | frames per class | broker crashes | peak broker RSS (growth) | wrong answers | bad data stored | result |',
    '|---|---:|---:|---|---:|---:|---:|---:|---|',
    `| PLAINTEXT | ${result.plaintext.writes.toLocaleString('en')} | ${result.plaintext.connections.toLocaleString('en')} | ${classes} | ${result.crashes} | ${megabytes(result.peakRssBytes)} (+${megabytes(result.peakRssBytes - result.rssBeforeBytes)}) | ${result.wrongAnswers} | ${result.badData} | ${verdict} |`,
    `| SASL_PLAINTEXT + SASL_SSL | ${result.sasl.frames.toLocaleString('en')} | ${result.sasl.connections.toLocaleString('en')} (${result.sasl.tlsConnections.toLocaleString('en')} TLS) | captured SCRAM/PLAIN conversations, ${result.sasl.mutatedFrames.toLocaleString('en')} frames mutated; ${result.sasl.answered.toLocaleString('en')} answered, ${result.sasl.authenticated.toLocaleString('en')} logins (PLAIN, true password), ${result.sasl.answeredAfterLogin.toLocaleString('en')} answered after login | (same broker) | (same) | ${result.sasl.anomalies.length} | – | ${result.sasl.anomalies.length === 0 ? 'pass' : '**FAIL**'} |`,
  ];
  return `${rows.join('\n')}\n\nStored afterwards: ${result.storedBatches.toLocaleString('en')} batches (${megabytes(result.storedBytes)}) verified, ${result.plaintext.acknowledgedBatches.toLocaleString('en')} acknowledged batches found byte for byte at their offsets (${result.plaintext.duplicates} idempotent retries acknowledged again at their first offset), every storm partition read end to end by kcat with check.crcs=true; storm ran ${result.seconds} s.`;
}
