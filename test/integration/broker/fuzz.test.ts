/**
 * The broker under hostile input (reliability.md H1–H5): at least 100,000 malformed or mutated
 * frames from a seeded PRNG (test/support/fuzz-frames.ts) — random bytes, mutated requests of
 * every served API, lying size prefixes, unknown keys and versions, corrupt record batches, and
 * requests real clients sent (kcat, kafkajs, the Java tools: the captured corpus of
 * test/support/fuzz-captured.ts) replayed as sent or mutated — sent over many connections to a
 * standalone broker in this process, by the storm of test/support/fuzz-storm.ts (which
 * `npm run chaos -- fuzz` runs at a million frames against a broker process).
 *
 * Every frame with an honest size prefix is decoded first by the test with the protocol layer's
 * own decoders, which predicts what the broker must do: answer it (the answer must be a
 * well-formed response of that API and version, in order), or close the connection; for each
 * produced batch the record validator (src/protocol/batch-validation.ts `validateProducerBatch`
 * under the broker's rules, cross-checked against the reference in test/support/batch-rules.ts)
 * predicts whether it is appended, the error code when it is not, and the exact bytes stored when
 * it is. Record timestamps sit years before the wall clock or hours past the one-hour after-bound,
 * never near it, so the prediction is not flaky.
 * Afterwards: nothing crashed, memory stayed bounded, every stored batch verifies, is one the
 * validator accepts as stored (`validateStoredBatch`) and as produced (unchanged), every
 * acknowledged batch is stored byte for byte at its offset, every partition with records is read
 * end to end by kcat with check.crcs=true, log end offsets moved only by appends the test can
 * account for, no connection is left open, and kcat still produces and consumes.
 *
 * A summary of the run is printed as `[fuzz] {…}`. FUZZ_FRAMES=20000 runs a shorter storm while
 * iterating.
 */
import { rmSync } from 'node:fs';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Broker } from '../../../src/broker/broker.js';
import {
  ApiVersionsApi,
  CreateTopicsApi,
  DescribeGroupsApi,
  JoinGroupApi,
  OffsetFetchApi,
  ProduceApi,
  SUPPORTED_API_VERSIONS,
  type ApiVersionsResponse,
  type CreateTopicsResponse,
  type ProduceRequest,
  type ProduceResponse,
} from '../../../src/protocol/apis/index.js';
import { decodeResponseHeader, encodeRequestHeader, responseHeaderVersion } from '../../../src/protocol/headers.js';
import { KafkaErrorCode } from '../../../src/protocol/kafka-errors.js';
import { CRC_OFFSET } from '../../../src/protocol/record-batch.js';
import { encodeRecordBatch } from '../../../src/protocol/records.js';
import { decodeResponseBody, type ApiSchema } from '../../../src/protocol/schema.js';
import { WireReader, WireWriter } from '../../../src/protocol/wire.js';
import { startInProcessBroker, type InProcessBroker } from '../../support/brokers.js';
import { FUZZ_GROUP_SETTINGS, batchDigest, framed, requestBody, type BatchPrediction } from '../../support/fuzz-frames.js';
import { loadCapturedCorpus, seedFrames } from '../../support/fuzz-captured.js';
import { accountForAppends, MAX_BATCH_BYTES, runStorm, Storm, StormLedger, STORM_TOPICS, tp, verifyStoredLogs } from '../../support/fuzz-storm.js';
import { Conversation } from '../../support/conversation.js';
import { kcat } from '../../support/kcat.js';
import { loadBatchValidation, referenceValidation, type LoadedValidation } from '../../support/batch-rules.js';

const SEED = 0x5eed_2011;
/** Malformed or mutated frames the broker must have processed (valid ones come on top). */
const TARGET_FRAMES = Number(process.env['FUZZ_FRAMES'] ?? 100_000);
/** The storm stops issuing new frames after this long (the 100,000 are asserted, so it must not). */
const STORM_BUDGET_MS = 150_000;
const RSS_GROWTH_LIMIT = 400 * 1024 * 1024;
const HEAP_GROWTH_LIMIT = 200 * 1024 * 1024;

const SETUP_RECORDS = 3;

const MiB = 1024 * 1024;

let handle: InProcessBroker;
let loadedValidation: LoadedValidation;
/** The broker's rules: its defaults (CreateTime, no bound before, one hour after). */
let prediction: BatchPrediction;
/** What setup and the storm wrote (acceptable batches, acknowledgements). */
const ledger = new StormLedger();

// ---------------------------------------------------------------------------------------------
// helpers

const gc: (() => void) | undefined = (() => {
  try {
    setFlagsFromString('--expose-gc');
    return runInNewContext('gc') as () => void;
  } catch {
    return undefined;
  }
})();

function collectGarbage(): void {
  gc?.();
  gc?.();
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

async function waitFor(condition: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) return false;
    await sleep(20);
  }
  return true;
}

/** The broker's open connections, over all its listeners. */
function openConnections(broker: Broker): number | undefined {
  return broker.connectionCount;
}

function decodeFrame<Req, Res>(api: ApiSchema<Req, Res>, version: number, frame: Buffer): { correlationId: number; body: Res } {
  expect(frame.readInt32BE(0)).toBe(frame.length - 4);
  const reader = new WireReader(frame, 4);
  const correlationId = decodeResponseHeader(reader, responseHeaderVersion(api.apiKey, version));
  const body = decodeResponseBody(api, version, reader);
  expect(reader.remaining()).toBe(0);
  return { correlationId, body };
}

async function produceOne(conversation: Conversation, topic: string, partition: number, records: Buffer, correlationId: number, acks = -1): Promise<ProduceResponse> {
  const request: ProduceRequest = { transactionalId: null, acks, timeoutMs: 30_000, topicData: [{ name: topic, partitionData: [{ index: partition, records }] }] };
  conversation.send(framed(requestBody(ProduceApi, 8, correlationId, request)));
  const { correlationId: answered, body } = decodeFrame(ProduceApi, 8, await conversation.response());
  expect(answered).toBe(correlationId);
  return body;
}

function logOf(topic: string, partition: number): NonNullable<ReturnType<Broker['logManager']['getLog']>> {
  const log = handle.broker.logManager.getLog(topic, partition);
  if (log === undefined) throw new Error(`no log for ${topic}-${partition}`);
  return log;
}

// ---------------------------------------------------------------------------------------------
// setup

beforeAll(async () => {
  loadedValidation = await loadBatchValidation();
  prediction = {
    validation: loadedValidation.validation,
    rules: { maxBatchBytes: MAX_BATCH_BYTES, timestampType: 'CreateTime', timestampBeforeMaxMs: Infinity, timestampAfterMaxMs: 3_600_000 },
    // The reference cross-checks the broker's validator.
    reference: referenceValidation,
  };
  handle = await startInProcessBroker({ 'log.visible.on.append': 'true', ...FUZZ_GROUP_SETTINGS });
  const conversation = await Conversation.open(handle.broker.port);
  try {
    const create = requestBody(CreateTopicsApi, 3, 1, {
      topics: STORM_TOPICS.map((topic) => ({ name: topic.name, numPartitions: topic.partitions, replicationFactor: 1, assignments: [], configs: [] })),
      timeoutMs: 10_000,
      validateOnly: false,
    });
    conversation.send(framed(create));
    const created = decodeFrame<unknown, CreateTopicsResponse>(CreateTopicsApi, 3, await conversation.response(30_000)).body;
    expect(created.topics.map((topic) => topic.errorCode)).toEqual(STORM_TOPICS.map(() => 0));
    let correlationId = 2;
    for (const topic of STORM_TOPICS) {
      for (let partition = 0; partition < topic.partitions; partition += 1) {
        const batch = encodeRecordBatch(Array.from({ length: SETUP_RECORDS }, (_, i) => ({ key: Buffer.from(`k${i}`), value: Buffer.from(`setup ${topic.name}-${partition} #${i}`), timestamp: 1_700_000_000_000 + i })));
        ledger.acceptable.add(batchDigest(batch));
        const response = await produceOne(conversation, topic.name, partition, batch, correlationId++);
        expect(response.responses[0]?.partitionResponses[0]).toMatchObject({ errorCode: 0, baseOffset: 0n });
        ledger.acknowledgedBatches.push({ key: tp(topic.name, partition), baseOffset: 0, digest: batchDigest(batch) });
        ledger.acknowledgedAt.set(`${tp(topic.name, partition)}@0`, batchDigest(batch));
        ledger.setupRecords.set(tp(topic.name, partition), SETUP_RECORDS);
      }
    }
  } finally {
    conversation.close();
  }
});

afterAll(async () => {
  if (handle === undefined) return;
  await handle.stop();
  rmSync(handle.dataDir, { recursive: true, force: true });
});

// ---------------------------------------------------------------------------------------------
// the storm

describe('broker fuzzing', () => {
  it('closes a connection whose first 4 bytes declare 0x7fffffff bytes, without allocating them', async () => {
    collectGarbage();
    const rssBefore = process.memoryUsage.rss();
    const conversation = await Conversation.open(handle.broker.port);
    conversation.send(Buffer.from('7fffffff', 'hex'));
    expect(await conversation.closedWithin(5_000)).toBe(true);
    expect(conversation.receivedBytes).toBe(0);
    expect(process.memoryUsage.rss() - rssBefore).toBeLessThan(64 * MiB);
  });

  it('answers ApiVersions v3 with the v0 UNSUPPORTED_VERSION body and keeps the connection for v2', async () => {
    const conversation = await Conversation.open(handle.broker.port);
    try {
      const correlationId = 0x0a0b0c0d;
      const writer = new WireWriter();
      encodeRequestHeader(writer, { apiKey: ApiVersionsApi.apiKey, apiVersion: 3, correlationId, clientId: 'rdkafka' });
      // Header v2's tag buffer, then ClientSoftwareName "kcat", ClientSoftwareVersion "1.7.1", tags.
      const v3 = Buffer.concat([writer.toBuffer(), Buffer.from('00 05 6b636174 06 312e372e31 00'.replace(/ /g, ''), 'hex')]);
      conversation.send(framed(v3));
      expect((await conversation.response()).toString('hex')).toBe('00000010' + '0a0b0c0d' + '0023' + '00000001' + '001200000002');

      conversation.send(framed(requestBody(ApiVersionsApi, 2, 77, {})));
      const { correlationId: answered, body } = decodeFrame<unknown, ApiVersionsResponse>(ApiVersionsApi, 2, await conversation.response());
      expect(answered).toBe(77);
      expect(body.errorCode).toBe(0);
      expect(body.apiKeys).toEqual([...SUPPORTED_API_VERSIONS].sort((a, b) => a.apiKey - b.apiKey));
      expect(conversation.closed).toBe(false);
    } finally {
      conversation.close();
    }
  });

  it.each([9999, 77, -1])('closes the connection on the unknown API key %i without answering', async (apiKey) => {
    const conversation = await Conversation.open(handle.broker.port);
    const writer = new WireWriter();
    encodeRequestHeader(writer, { apiKey, apiVersion: 0, correlationId: 5, clientId: 'fuzz' });
    conversation.send(framed(writer.toBuffer()));
    expect(await conversation.closedWithin(5_000)).toBe(true);
    expect(conversation.receivedBytes).toBe(0);
  });

  it('answers a Produce whose batch has a corrupt CRC with CORRUPT_MESSAGE and appends nothing', async () => {
    const log = logOf('storm-a', 0);
    const endBefore = log.logEndOffset;
    const sizeBefore = log.sizeInBytes;
    const batch = encodeRecordBatch([{ key: null, value: Buffer.from('damaged in transit') }]);
    batch.writeUInt32BE(batch.readUInt32BE(CRC_OFFSET) ^ 0x00010000, CRC_OFFSET);
    const conversation = await Conversation.open(handle.broker.port);
    try {
      const response = await produceOne(conversation, 'storm-a', 0, batch, 41, 1);
      expect(response.responses[0]?.partitionResponses[0]).toMatchObject({ index: 0, errorCode: KafkaErrorCode.CORRUPT_MESSAGE, baseOffset: -1n });
      expect(log.logEndOffset).toBe(endBefore);
      expect(log.sizeInBytes).toBe(sizeBefore);
      // An error answer, not a closed connection: the same connection still serves.
      conversation.send(framed(requestBody(ApiVersionsApi, 1, 42, {})));
      expect(decodeFrame(ApiVersionsApi, 1, await conversation.response()).correlationId).toBe(42);
    } finally {
      conversation.close();
    }
  });

  it('answers INVALID_GROUP_ID, without a warning, to a group id no path can hold (fails without the usableGroupId fix: COORDINATOR_NOT_AVAILABLE, a warning per request)', async () => {
    const conversation = await Conversation.open(handle.broker.port);
    const logged = handle.logLines.length;
    try {
      for (const groupId of ['fuzz-group-\u0000', 'a/b', '..', 'ca\u0001ure']) {
        const join = await conversation.request(JoinGroupApi, 0, { groupId, sessionTimeoutMs: 1500, rebalanceTimeoutMs: 1500, memberId: '', groupInstanceId: null, protocolType: 'consumer', protocols: [{ name: 'range', metadata: Buffer.alloc(0) }] });
        expect(join.errorCode, groupId).toBe(KafkaErrorCode.INVALID_GROUP_ID);
        const fetched = await conversation.request(OffsetFetchApi, 1, { groupId, topics: [{ name: 'storm-a', partitionIndexes: [0] }] });
        expect(fetched.topics.flatMap((topic) => topic.partitions.map((partition) => partition.errorCode)), groupId).toEqual([KafkaErrorCode.INVALID_GROUP_ID]);
        const described = await conversation.request(DescribeGroupsApi, 0, { groups: [groupId], includeAuthorizedOperations: false });
        expect(described.groups[0]?.errorCode, groupId).toBe(KafkaErrorCode.INVALID_GROUP_ID);
      }
      expect(handle.logLines.slice(logged).filter((line) => Number(line['level']) >= 40)).toEqual([]);
    } finally {
      conversation.close();
    }
  });

  it(`survives ${TARGET_FRAMES.toLocaleString('en')} malformed or mutated frames: answers or closes, bounded memory, nothing invalid appended`, async () => {
    const broker = handle.broker;
    const storm = new Storm({ seed: SEED, target: TARGET_FRAMES, prediction, captured: seedFrames(loadCapturedCorpus()) }, ledger);
    collectGarbage();
    const before = process.memoryUsage();
    let peakRss = before.rss;
    let peakHeap = before.heapUsed;
    // Error-level broker log lines, by message; `unexplained` keeps the first few in full.
    const brokerErrors = new Map<string, number>();
    const unexplained: string[] = [];
    const drainLog = (): void => {
      for (const line of handle.logLines) {
        if (typeof line['level'] !== 'number' || line['level'] < 50) continue;
        const message = String(line['msg']);
        brokerErrors.set(message, (brokerErrors.get(message) ?? 0) + 1);
        if (unexplained.length < 20) unexplained.push(`${message} ${JSON.stringify(line['err'] ?? '')}`.slice(0, 600));
      }
      handle.logLines.length = 0;
    };
    const sampler = setInterval(() => {
      const usage = process.memoryUsage();
      peakRss = Math.max(peakRss, usage.rss);
      peakHeap = Math.max(peakHeap, usage.heapUsed);
      drainLog();
    }, 100);
    const started = Date.now();
    const budget = setTimeout(() => storm.stop(), STORM_BUDGET_MS);
    try {
      await runStorm(storm, broker.port);
    } finally {
      clearTimeout(budget);
      clearInterval(sampler);
    }
    const seconds = (Date.now() - started) / 1000;
    drainLog();

    const stillOpen = (await waitFor(() => (openConnections(broker) ?? 0) === 0, 10_000)) ? 0 : openConnections(broker);
    const logs = broker.logManager.allLogs();
    for (const log of logs) await log.flush();
    const stored = await verifyStoredLogs(
      logs.map((log) => ({ name: log.name, topic: log.topic, partition: log.partition, directory: log.directory, logStartOffset: log.logStartOffset, logEndOffset: log.logEndOffset })),
      ledger,
      prediction,
      loadedValidation.validation,
    );
    collectGarbage();
    const after = process.memoryUsage();

    const anomalyKinds = new Map<string, number>();
    for (const anomaly of storm.anomalies) anomalyKinds.set(`${anomaly.what.slice(0, 80)} [${anomaly.category}/${anomaly.kind}]`, (anomalyKinds.get(`${anomaly.what.slice(0, 80)} [${anomaly.category}/${anomaly.kind}]`) ?? 0) + 1);
    const report = {
      seed: SEED,
      validator: loadedValidation.source,
      acknowledgedBatches: ledger.acknowledgedBatches.length,
      duplicateAcknowledgements: storm.duplicates,
      anomalies: Object.fromEntries(anomalyKinds),
      seconds,
      processed: Object.fromEntries(storm.processed),
      processedMalformedOrMutated: storm.processedMalformed,
      writes: storm.writes,
      resends: storm.resends,
      connections: storm.connections,
      closedByBroker: storm.closedByBroker,
      abandonedLongPolls: storm.givenUp,
      probes: storm.probes,
      responses: storm.responses,
      rawResponses: storm.rawResponses,
      skipped: Object.fromEntries(storm.skipped),
      produceErrorCodes: Object.fromEntries(storm.produceErrors),
      memory: {
        rssBeforeMiB: +(before.rss / MiB).toFixed(1),
        rssPeakMiB: +(peakRss / MiB).toFixed(1),
        rssAfterMiB: +(after.rss / MiB).toFixed(1),
        heapBeforeMiB: +(before.heapUsed / MiB).toFixed(1),
        heapPeakMiB: +(peakHeap / MiB).toFixed(1),
        heapAfterGcMiB: +(after.heapUsed / MiB).toFixed(1),
        gc: gc !== undefined,
      },
      stored: { logs: stored.logs, batches: stored.batches, bytes: stored.bytes },
      stormPartitions: Object.fromEntries(
        STORM_TOPICS.flatMap((topic) =>
          Array.from({ length: topic.partitions }, (_, partition) => {
            const key = tp(topic.name, partition);
            return [key, { setup: ledger.setupRecords.get(key) ?? 0, acknowledged: storm.acked.get(key) ?? 0, acceptableWritten: storm.written.get(key) ?? 0, logEndOffset: stored.logEndOffsets.get(key) }];
          }),
        ),
      ),
      openConnectionsAfter: stillOpen ?? 'unknown',
      generated: Object.fromEntries([...storm.generated].sort(([a], [b]) => a.localeCompare(b))),
      mutations: Object.fromEntries(storm.mutations),
      brokerErrorLogLines: Object.fromEntries(brokerErrors),
    };
    process.stdout.write(`[fuzz] ${JSON.stringify(report, null, 1)}\n`);

    expect(storm.anomalies, JSON.stringify(storm.anomalies.slice(0, 10), null, 1)).toEqual([]);
    expect(unexplained, unexplained.join('\n')).toEqual([]);
    expect(storm.processedMalformed).toBeGreaterThanOrEqual(TARGET_FRAMES);
    expect(peakRss - before.rss).toBeLessThan(RSS_GROWTH_LIMIT);
    expect(after.heapUsed - before.heapUsed).toBeLessThan(HEAP_GROWTH_LIMIT);
    expect(stillOpen ?? 0).toBe(0);
    expect(stored.problems, stored.problems.slice(0, 10).join('\n')).toEqual([]);

    // The storm's topics grew only by appends the test can account for.
    const unaccounted = accountForAppends(storm, stored);
    expect(unaccounted, unaccounted.join('\n')).toEqual([]);
  }, 300_000);

  it('every partition with records is read end to end by kcat with check.crcs=true', async () => {
    const problems: string[] = [];
    let partitions = 0;
    let records = 0;
    for (const log of handle.broker.logManager.allLogs()) {
      await log.flush();
      const expected = log.logEndOffset - log.logStartOffset;
      if (expected === 0) continue;
      partitions += 1;
      const result = await kcat(['-b', handle.bootstrap, '-X', 'check.crcs=true', '-C', '-t', log.topic, '-p', String(log.partition), '-o', 'beginning', '-e', '-q', '-f', '%o\n'], undefined, 30_000).catch((error: unknown) => ({ status: null, stdout: '', stderr: String(error) }));
      const offsets = result.stdout.split('\n').filter((line) => line !== '').map(Number);
      records += offsets.length;
      if (result.status !== 0 || result.stderr.trim() !== '') problems.push(`${log.name}: kcat exited ${result.status}: ${result.stderr.slice(0, 500)}`);
      const contiguous = offsets.every((offset, i) => offset === log.logStartOffset + i);
      if (offsets.length !== expected || !contiguous) problems.push(`${log.name}: kcat read ${offsets.length} records (contiguous: ${contiguous}), the log holds ${expected} from ${log.logStartOffset}`);
    }
    process.stdout.write(`[fuzz] kcat check.crcs=true read ${records} records of ${partitions} partitions\n`);
    expect(partitions).toBeGreaterThan(0);
    expect(problems, problems.slice(0, 10).join('\n')).toEqual([]);
  }, 300_000);

  it('still serves kcat afterwards: 10 messages produced to a new topic come back identical', async () => {
    const messages = Array.from({ length: 10 }, (_, i) => `after the storm #${i} ${'x'.repeat(i * 7)}`);
    const produced = await kcat(['-b', handle.bootstrap, '-P', '-t', 'after-storm', '-p', '0'], messages.map((m) => `${m}\n`).join(''));
    expect(produced.status, produced.stderr).toBe(0);
    const consumed = await kcat(['-b', handle.bootstrap, '-C', '-t', 'after-storm', '-p', '0', '-o', 'beginning', '-e', '-f', '%s\n']);
    expect(consumed.status, consumed.stderr).toBe(0);
    expect(consumed.stdout.split('\n').filter((line) => line !== '')).toEqual(messages);
  });
});
