/**
 * Our index files are Kafka's: Apache Kafka 3.9.1's kafka-dump-log.sh (kafka.tools.DumpLogSegments)
 * checks every `.index` and `.timeindex` of a partition against its segments and reports no
 * mismatch. `--verify-index-only` reads the batch at each offset entry's position and wants its
 * LAST offset; for each time entry it finds the batch ending at the entry's offset and wants its
 * max record timestamp, timestamps strictly increasing. `--index-sanity-check` runs the checks a
 * Kafka broker runs at start.
 *
 * The partition has many small segments (segment.bytes 2048) and dense indexes (index.interval.bytes
 * 300), written by our producer (batches of 1–7 records, every codec, timestamps that go back and
 * repeat, records out of order within a batch) and by kcat (librdkafka's snappy batches).
 *
 * The same files rewritten in the convention of earlier versions (base offsets) are reported by
 * the tool, so the check is not blind; a broker started on them rebuilds them in Kafka's
 * convention, serves the same records and timestamp lookups, and the tool then passes them too.
 *
 * A compacted topic after the cleaner ran passes too: its cleaned segments have gaps, batches
 * rebuilt with fewer records (their MaxTimestamp is the kept records' newest, which the tool
 * checks), and producers' last batches kept as headers alone (no record, so no timestamp to index).
 */
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Kafka, logLevel } from 'kafkajs';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { Producer, type CompressionCodec } from '../../src/client/producer.js';
import { LAST_OFFSET_DELTA_OFFSET } from '../../src/protocol/record-batch.js';
import { waitUntil } from '../services/process.js';
import { ensureJars, KAFKA_SERVER_JARS } from '../services/service-jars.js';
import { startInProcessBroker, type InProcessBroker } from '../support/brokers.js';
import { kafkaIndexProblems, writeEarlierConventionIndexes } from '../support/index-files.js';
import { describeRun, runKafkaTool, type JavaToolResult } from '../support/java.js';
import { kcat } from '../support/kcat.js';

const { runDir } = inject('compat');
const TOPIC = 'dump-log';
const INDEX_INTERVAL_BYTES = 300;
const SETTINGS = { 'num.partitions': '1', 'log.segment.bytes': '2048', 'log.index.interval.bytes': String(INDEX_INTERVAL_BYTES) };
const CODECS: readonly CompressionCodec[] = ['none', 'gzip', 'snappy', 'lz4', 'zstd'];

const brokers: InProcessBroker[] = [];
const folders: string[] = [];
afterAll(async () => {
  for (const broker of brokers) await broker.stop();
  for (const folder of folders) rmSync(folder, { recursive: true, force: true });
});

async function startBroker(dataDir?: string): Promise<InProcessBroker> {
  const broker = await startInProcessBroker(SETTINGS, dataDir);
  brokers.push(broker);
  return broker;
}

async function stopBroker(broker: InProcessBroker): Promise<void> {
  brokers.splice(brokers.indexOf(broker), 1);
  await broker.stop();
}

/** kafka-dump-log.sh `<flag> --files <all files>`, in one JVM. */
async function dumpLog(flag: '--verify-index-only' | '--index-sanity-check', files: readonly string[]): Promise<JavaToolResult> {
  const serverJars = await ensureJars(KAFKA_SERVER_JARS);
  const result = await runKafkaTool('kafka.tools.DumpLogSegments', [flag, '--files', files.join(',')], { kafkaToolsDir: serverJars, runDir, timeoutMs: 100_000 });
  expect(result.status, describeRun(result)).toBe(0);
  // Every file was read (an unknown or unreadable one is skipped with a message, or throws).
  for (const file of files) expect(result.stdout, describeRun(result)).toContain(`Dumping ${file}\n`);
  return result;
}

/** What --index-sanity-check prints for a file that passes (an empty offset index is only reported empty). */
function sanityLine(file: string): string {
  return file.endsWith('.index') && statSync(file).size === 0 ? `${file} is empty.\n` : `${file} passed sanity check.\n`;
}

/**
 * What the tool reported wrong, line by line: offset entries whose batch ends elsewhere
 * ("Mismatches in"), time entries whose batch has another max timestamp, out-of-order timestamps,
 * offsets found in no batch, and any exception (a failed sanity check throws).
 */
function reportedProblems(result: JavaToolResult): string[] {
  const problem = /Mismatches in|Index offset:|Found timestamp mismatch|Index timestamp:|Found out of order timestamp|not found in the log|Indexed offset:|Non-consecutive|Exception|corrupt/i;
  return `${result.stdout}\n${result.stderr}`.split('\n').filter((line) => problem.test(line));
}

function indexFiles(dataDir: string, topic = TOPIC): string[] {
  const folder = join(dataDir, `${topic}-0`);
  return readdirSync(folder)
    .filter((name) => name.endsWith('.index') || name.endsWith('.timeindex'))
    .sort()
    .map((name) => join(folder, name));
}

interface Served {
  /** `offset timestamp value` of every record, as kcat reads them. */
  readonly records: string[];
  /** ListOffsets by timestamp, for probes around every record's timestamp. */
  readonly byTime: string[];
  /** Offsets whose read (`PartitionLog.read`) does not start with the batch holding them. */
  readonly misplacedReads: number[];
}

async function served(broker: InProcessBroker, timestamps: readonly number[]): Promise<Served> {
  const read = await kcat(['-b', broker.bootstrap, '-C', '-t', TOPIC, '-p', '0', '-o', 'beginning', '-e', '-X', 'check.crcs=true', '-f', '%o %T %s\n']);
  expect(read.status, read.stderr).toBe(0);
  const log = broker.broker.logManager.getLog(TOPIC, 0)!;
  const byTime: string[] = [];
  for (const timestamp of timestamps) {
    for (const probe of [timestamp - 1, timestamp, timestamp + 1]) {
      const found = await log.offsetForTimestamp(BigInt(probe));
      byTime.push(`${probe} → ${found === undefined ? 'none' : `${found.offset}@${found.timestamp}`}`);
    }
  }
  const misplacedReads: number[] = [];
  for (let offset = 0; offset < log.logEndOffset; offset += 1) {
    const { slice } = await log.read(offset, 1);
    const bytes = await slice!.readBytes();
    slice!.release();
    const baseOffset = Number(bytes.readBigInt64BE(0));
    if (baseOffset > offset || baseOffset + bytes.readInt32BE(LAST_OFFSET_DELTA_OFFSET) < offset) misplacedReads.push(offset);
  }
  return { records: read.stdout.split('\n').filter((line) => line !== ''), byTime, misplacedReads };
}

describe("kafka-dump-log.sh checks our index files (Kafka's convention: entries name a batch's last offset)", () => {
  it('reports no mismatch on any segment, and files of the earlier convention are rebuilt at load until it reports none', async () => {
    const broker = await startBroker();
    const now = Date.now();
    const timestamps: number[] = [];
    for (const [index, codec] of CODECS.entries()) {
      const producer = await Producer.connect({ bootstrap: [broker.bootstrap], acks: -1, lingerMs: 0, compression: codec, idempotent: index % 2 === 0 });
      for (let batch = 0; batch < 30; batch += 1) {
        const count = 1 + ((batch * 5 + index) % 7);
        const step = index * 30 + batch;
        // Mostly rising; every 4th batch goes back in time, every 7th repeats the one before.
        const base = now - 3_600_000 + (step % 4 === 3 ? step * 1_000 - 50_000 : step % 7 === 6 ? (step - 1) * 1_000 : step * 1_000);
        const records = Array.from({ length: count }, (_, record) => {
          // Out of order within the batch: the max is not the last record's.
          const timestamp = base + ((record * 3) % count) * 10;
          timestamps.push(timestamp);
          return { partition: 0, key: null, value: Buffer.from(`${codec}-${batch}-${record}-${'x'.repeat((step * 13) % 90)}`), timestamp };
        });
        await producer.send(TOPIC, records);
      }
      await producer.close();
    }
    const lines = Array.from({ length: 200 }, (_, line) => `kcat-${line}-${'y'.repeat(line % 60)}`).join('\n');
    const produced = await kcat(['-b', broker.bootstrap, '-P', '-t', TOPIC, '-p', '0', '-z', 'snappy', '-X', 'batch.num.messages=9', '-X', 'linger.ms=20'], `${lines}\n`);
    expect(produced.status, produced.stderr).toBe(0);
    const log = broker.broker.logManager.getLog(TOPIC, 0)!;
    expect(log.logEndOffset).toBeGreaterThan(500);
    const before = await served(broker, timestamps);
    expect(before.misplacedReads).toEqual([]);
    const dataDir = broker.dataDir;
    folders.push(dataDir);
    await stopBroker(broker);

    const files = indexFiles(dataDir);
    // Our own reading of the rules agrees (it also wants the entry at position 0).
    expect(kafkaIndexProblems(join(dataDir, `${TOPIC}-0`))).toEqual([]);
    const offsetEntries = files.filter((file) => file.endsWith('.index')).reduce((sum, file) => sum + statSync(file).size / 8, 0);
    const timeEntries = files.filter((file) => file.endsWith('.timeindex')).reduce((sum, file) => sum + statSync(file).size / 12, 0);
    expect(files.length / 2, 'segments').toBeGreaterThanOrEqual(10);
    expect(offsetEntries).toBeGreaterThan(60);
    // Fewer time entries: one only where the max timestamp grew.
    expect(timeEntries).toBeGreaterThan(30);
    expect(timeEntries).toBeLessThan(offsetEntries);

    // The same data with the earlier convention's indexes: a copy to convert, and one to show the tool.
    const earlier = mkdtempSync(join(tmpdir(), 'tributary-dump-log-earlier-'));
    const converted = mkdtempSync(join(tmpdir(), 'tributary-dump-log-converted-'));
    folders.push(earlier, converted);
    cpSync(dataDir, earlier, { recursive: true });
    expect(writeEarlierConventionIndexes(join(earlier, `${TOPIC}-0`), INDEX_INTERVAL_BYTES).segments).toBe(files.length / 2);
    cpSync(earlier, converted, { recursive: true });

    const restarted = await startBroker(converted);
    // Every segment's index is rebuilt (one of less than index.interval.bytes had an empty one).
    const rebuilt = restarted.logLines.filter((line) => String(line['msg']).endsWith('; rebuilding it from the segment'));
    expect(rebuilt.length, 'segments rebuilt').toBe(files.length / 2);
    const after = await served(restarted, timestamps);
    expect(after.misplacedReads).toEqual([]);
    expect(after.records).toEqual(before.records);
    expect(after.byTime).toEqual(before.byTime);
    await stopBroker(restarted);
    // Rebuilt byte for byte as written.
    for (const file of indexFiles(converted)) expect(readFileSync(file), file).toEqual(readFileSync(file.replace(converted, dataDir)));

    const ours = await dumpLog('--verify-index-only', [...files, ...indexFiles(converted)]);
    expect(reportedProblems(ours), describeRun(ours)).toEqual([]);
    const sane = await dumpLog('--index-sanity-check', [...files, ...indexFiles(converted)]);
    for (const file of [...files, ...indexFiles(converted)]) expect(sane.stdout, describeRun(sane)).toContain(sanityLine(file));
    expect(reportedProblems(sane), describeRun(sane)).toEqual([]);

    // The check sees the earlier convention: its offset entries name base offsets.
    const old = await dumpLog('--verify-index-only', indexFiles(earlier));
    expect(reportedProblems(old).filter((line) => line.startsWith('Mismatches in :')).length, describeRun(old)).toBeGreaterThan(files.length / 4);
  });

  it('reports no mismatch on a compacted topic after the cleaner ran: gaps, rewritten batches, producers’ last batches kept as headers', async () => {
    const broker = await startBroker();
    const topic = 'dump-log-compacted';
    const admin = new Kafka({ brokers: [broker.bootstrap], logLevel: logLevel.NOTHING }).admin();
    await admin.connect();
    expect(await admin.createTopics({ topics: [{ topic, numPartitions: 1, configEntries: [{ name: 'cleanup.policy', value: 'compact' }] }] })).toBe(true);
    await admin.disconnect();
    const now = Date.now();
    // The first batch's newest record is superseded at once: the cleaner rebuilds the batch with
    // the other, older one, and the time entry at position 0 must carry that one's timestamp.
    const first = await Producer.connect({ bootstrap: [broker.bootstrap], acks: -1, lingerMs: 0 });
    await first.send(topic, [
      { partition: 0, key: Buffer.from('superseded'), value: Buffer.from('old'), timestamp: now - 3_000_000 },
      { partition: 0, key: Buffer.from('kept'), value: Buffer.from('kept'), timestamp: now - 3_600_000 },
    ]);
    await first.send(topic, [{ partition: 0, key: Buffer.from('superseded'), value: Buffer.from('new'), timestamp: now - 3_600_000 }]);
    await first.close();
    let written = 3;
    for (const [index, codec] of CODECS.entries()) {
      // Idempotent: each producer's last batch is kept, as a header alone when its records are superseded.
      const producer = await Producer.connect({ bootstrap: [broker.bootstrap], acks: -1, lingerMs: 0, compression: codec, idempotent: true });
      for (let batch = 0; batch < 25; batch += 1) {
        const step = index * 25 + batch;
        const base = now - 3_600_000 + (step % 4 === 3 ? step * 1_000 - 50_000 : step * 1_000);
        const records = Array.from({ length: 1 + ((batch * 3 + index) % 6) }, (_, record) => ({
          partition: 0,
          key: Buffer.from(`key-${(step * 7 + record) % 11}`),
          // Some tombstones.
          value: (step + record) % 9 === 4 ? null : Buffer.from(`${codec}-${batch}-${record}-${'z'.repeat((step * 17) % 70)}`),
          timestamp: base + ((record * 5) % 3) * 10,
        }));
        await producer.send(topic, records);
        written += records.length;
      }
      await producer.close();
    }
    const log = broker.broker.logManager.getLog(topic, 0)!;
    await waitUntil(async () => log.highWatermark === written, { what: 'every record readable', timeoutMs: 30_000 });
    const sizeBefore = log.sizeInBytes;
    for (let pass = 0; pass < 10 && (await broker.broker.logManager.cleaner.cleanLogNow(log)) !== undefined; pass += 1);
    expect(log.sizeInBytes).toBeLessThan(sizeBefore / 2);
    const dataDir = broker.dataDir;
    folders.push(dataDir);
    await stopBroker(broker);

    expect(kafkaIndexProblems(join(dataDir, `${topic}-0`))).toEqual([]);
    const files = indexFiles(dataDir, topic);
    expect(files.length / 2, 'segments').toBeGreaterThanOrEqual(2);
    const verified = await dumpLog('--verify-index-only', files);
    expect(reportedProblems(verified), describeRun(verified)).toEqual([]);
    const sane = await dumpLog('--index-sanity-check', files);
    for (const file of files) expect(sane.stdout, describeRun(sane)).toContain(sanityLine(file));
    expect(reportedProblems(sane), describeRun(sane)).toEqual([]);
  });
});
