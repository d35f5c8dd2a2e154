/**
 * The broker under hostile input (reliability.md H1–H5): at least 100,000 malformed or mutated
 * frames from a seeded PRNG (test/support/fuzz-frames.ts) — random bytes, mutated requests of
 * every served API, lying size prefixes, unknown keys and versions, corrupt record batches — sent
 * over many connections to a standalone broker in this process.
 *
 * Every frame with an honest size prefix is decoded first by the test with the protocol layer's
 * own decoders, which predicts what the broker must do: answer it (the answer must be a
 * well-formed response of that API and version, in order), or close the connection; for each
 * produced batch the record validator (src/protocol/batch-validation.ts `validateProducerBatch`
 * under the broker's rules, cross-checked against the reference in test/support/batch-rules.ts)
 * predicts whether it is appended, the error code when
 * it is not, and the exact bytes stored when it is. Record timestamps sit years before the wall
 * clock or hours past the one-hour after-bound, never near it, so the prediction is not flaky.
 * Afterwards: nothing crashed, memory stayed bounded, every stored batch verifies, is one the
 * validator accepts as stored (`validateStoredBatch`) and as produced (unchanged), every
 * acknowledged batch is stored byte for byte at its offset, every partition with records is read
 * end to end by kcat with check.crcs=true, log end offsets moved only by appends the test can
 * account for, no connection is left open, and kcat still produces and consumes.
 *
 * Well-formed but expensive requests are kept out of the storm (see `Storm.admit`): CreateTopics
 * for more than a few partitions, and topic creation beyond a budget of names. A summary of the
 * run is printed as `[fuzz] {…}`. FUZZ_FRAMES=20000 runs a shorter storm while iterating.
 */
import { closeSync, fstatSync, openSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createConnection } from 'node:net';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Broker } from '../../../src/broker/broker.js';
import {
  ApiVersionsApi,
  CreateTopicsApi,
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
import { verifyBatches, type BatchInfo } from '../../../src/storage/batch-scan.js';
import { LOOPBACK } from '../../services/network.js';
import { startInProcessBroker, type InProcessBroker } from '../../support/brokers.js';
import {
  FRAME_CATEGORIES,
  FUZZ_GROUP_SETTINGS,
  FrameFactory,
  Prng,
  analyzeFrame,
  batchDigest,
  type BatchPrediction,
  fetchWaitMs,
  framed,
  requestBody,
  topicsCreatedBy,
  topicsDeletedBy,
  type FrameAnalysis,
  type FrameCategory,
  type FuzzFrame,
} from '../../support/fuzz-frames.js';
import { Conversation } from '../../support/conversation.js';
import { kcat } from '../../support/kcat.js';
import { loadBatchValidation, outcome, referenceValidation, type LoadedValidation } from '../../support/batch-rules.js';

const SEED = 0x5eed_2011;
/** Malformed or mutated frames the broker must have processed (valid ones come on top). */
const TARGET_FRAMES = Number(process.env['FUZZ_FRAMES'] ?? 100_000);
/** Connections open at once, and requests in flight on each (below the broker's 32, so it never pauses reading). */
const CONNECTIONS = 8;
const WINDOW = 8;
/** The storm stops issuing new frames after this long (the 100,000 are asserted, so it must not). */
const STORM_BUDGET_MS = 150_000;
/** A connection with a request outstanding and no progress for this long is a hang. */
const HANG_MS = 5_000;
/** Fetches that may park longer than this are abandoned by the client (closing the connection). */
const LONG_POLL_GIVE_UP_MS = 300;
/** Well-formed requests that would create topics with more partitions than this are not sent (see `admit`). */
const MAX_CREATED_PARTITIONS = 4;
/** Distinct topic names the storm may cause to be created (Metadata auto-creation, CreateTopics). */
const TOPIC_NAME_BUDGET = 300;
const MAX_BATCH_BYTES = 1_048_588;
const MAX_RESPONSE_BYTES = 64 * 1024 * 1024;
const RSS_GROWTH_LIMIT = 400 * 1024 * 1024;
const HEAP_GROWTH_LIMIT = 200 * 1024 * 1024;

/** Topics that exist before the storm; DeleteTopics frames naming them are not sent. */
const STORM_TOPICS = [
  { name: 'storm-a', partitions: 3 },
  { name: 'storm-b', partitions: 2 },
] as const;
const SCRATCH_TOPICS = Array.from({ length: 6 }, (_, i) => `scratch-${i}`);
const SETUP_RECORDS = 3;

const MiB = 1024 * 1024;

let handle: InProcessBroker;
let loadedValidation: LoadedValidation;
/** The broker's rules: its defaults (CreateTime, no bound before, one hour after). */
let prediction: BatchPrediction;
/** Error codes of the record validator: a broker answering one of these has judged the batch. */
const VALIDATION_CODES: ReadonlySet<number> = new Set([
  KafkaErrorCode.CORRUPT_MESSAGE,
  KafkaErrorCode.MESSAGE_TOO_LARGE,
  KafkaErrorCode.INVALID_TIMESTAMP,
  KafkaErrorCode.UNSUPPORTED_COMPRESSION_TYPE,
  KafkaErrorCode.INVALID_RECORD,
]);
/** Every acknowledged batch: where it was appended and the digest of what must be stored there. */
const acknowledgedBatches: { key: string; baseOffset: number; digest: string }[] = [];
/** Digests of every batch the append validation accepts that was ever sent (setup included). */
const acceptable = new Set<string>();
/** Records appended at setup, per `topic/partition`. */
const setupRecords = new Map<string, number>();

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

function tp(topic: string, partition: number): string {
  return `${topic}/${partition}`;
}

function hex(bytes: Buffer, limit = 512): string {
  const shown = bytes.subarray(0, limit).toString('hex');
  return bytes.length > limit ? `${shown}… (${bytes.length} bytes)` : shown;
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
        acceptable.add(batchDigest(batch));
        const response = await produceOne(conversation, topic.name, partition, batch, correlationId++);
        expect(response.responses[0]?.partitionResponses[0]).toMatchObject({ errorCode: 0, baseOffset: 0n });
        acknowledgedBatches.push({ key: tp(topic.name, partition), baseOffset: 0, digest: batchDigest(batch) });
        setupRecords.set(tp(topic.name, partition), SETUP_RECORDS);
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

interface Sent {
  readonly frame: FuzzFrame;
  readonly analysis: FrameAnalysis | undefined;
  /** Not a fuzz frame: an ApiVersions request that shows the acks=0 Produce requests before it were taken without closing. */
  readonly probe?: boolean;
  /** Client-side give-up time for a long-polling fetch. */
  giveUpAt: number | undefined;
}

interface Anomaly {
  readonly what: string;
  readonly category: FrameCategory;
  readonly kind: string;
  readonly frame: string;
  readonly detail: string;
}

class Storm {
  private readonly factory = new FrameFactory(new Prng(SEED), { topics: STORM_TOPICS, scratchTopics: SCRATCH_TOPICS });
  private readonly requeued: Sent[] = [];
  private readonly creatableNames = new Set<string>([...STORM_TOPICS.map((topic) => topic.name), ...SCRATCH_TOPICS]);
  private issuedMalformed = 0;
  private stopIssuing = false;
  inFlight = 0;

  readonly processed = new Map<FrameCategory, number>(FRAME_CATEGORIES.map((category) => [category, 0]));
  readonly skipped = new Map<string, number>();
  readonly anomalies: Anomaly[] = [];
  readonly produceErrors = new Map<number, number>();
  /** Per `topic/partition`: records acknowledged (error 0), and records in every acceptable batch written. */
  readonly acked = new Map<string, number>();
  readonly ackedRanges = new Map<string, [number, number][]>();
  readonly written = new Map<string, number>();
  writes = 0;
  resends = 0;
  connections = 0;
  responses = 0;
  rawResponses = 0;
  closedByBroker = 0;
  givenUp = 0;
  probes = 0;

  get generated(): ReadonlyMap<string, number> {
    return this.factory.generated;
  }

  get mutations(): ReadonlyMap<string, number> {
    return this.factory.mutations;
  }

  get processedMalformed(): number {
    let total = 0;
    for (const [category, count] of this.processed) if (category !== 'valid') total += count;
    return total;
  }

  stop(): void {
    this.stopIssuing = true;
  }

  private nextProbe = -1;

  /** Probes use negative correlation ids, which no generated request has unmutated. */
  probeCorrelationId(): number {
    this.nextProbe -= 1;
    return this.nextProbe;
  }

  get finished(): boolean {
    return (this.stopIssuing || this.issuedMalformed >= TARGET_FRAMES) && this.requeued.length === 0 && this.inFlight === 0;
  }

  /** The next frame to send: one put back by a closed connection, else a new one. */
  next(): Sent | undefined {
    const again = this.requeued.shift();
    if (again !== undefined) return again;
    while (!this.stopIssuing && this.issuedMalformed < TARGET_FRAMES) {
      const frame = this.factory.next();
      const analysis = frame.handling === 'analyze' ? analyzeFrame(frame.bytes, prediction) : undefined;
      if (analysis !== undefined && !this.admit(analysis)) continue;
      if (frame.category !== 'valid') this.issuedMalformed += 1;
      if (analysis?.kind === 'close' && analysis.unexpectedError !== undefined) {
        this.anomaly('decoder threw an error that is not MalformedMessageError', { frame, analysis, giveUpAt: undefined }, analysis.unexpectedError);
      }
      return { frame, analysis, giveUpAt: undefined };
    }
    return undefined;
  }

  /**
   * Well-formed requests that are merely expensive are kept out: the storm is about malformed
   * input, and a CreateTopics asking for thousands of partitions is a valid (if unwelcome)
   * request whose cost is the broker's policy. Likewise the topic names the storm can create are
   * bounded, and the topics the storm produces to are never deleted.
   */
  private admit(analysis: FrameAnalysis): boolean {
    const created = topicsCreatedBy(analysis, 1).filter((topic) => /^[a-zA-Z0-9._-]{1,249}$/.test(topic.name) && topic.name !== '.' && topic.name !== '..');
    if (analysis.kind !== 'close' && analysis.api.apiKey === CreateTopicsApi.apiKey) {
      const request = analysis.request as { topics: readonly { numPartitions: number; replicationFactor: number; assignments: readonly unknown[] }[] };
      const expensive = request.topics.some((topic) => topic.numPartitions > MAX_CREATED_PARTITIONS && topic.assignments.length === 0 && (topic.replicationFactor === 1 || topic.replicationFactor === -1));
      if (expensive && created.length > 0) return this.skip('create-many-partitions');
    }
    const fresh = [...new Set(created.map((topic) => topic.name))].filter((name) => !this.creatableNames.has(name));
    if (fresh.length > 0) {
      if (this.creatableNames.size + fresh.length > TOPIC_NAME_BUDGET) return this.skip('topic-name-budget');
      for (const name of fresh) this.creatableNames.add(name);
    }
    if (topicsDeletedBy(analysis).some((name) => STORM_TOPICS.some((topic) => topic.name === name))) return this.skip('delete-storm-topic');
    return true;
  }

  private skip(reason: string): false {
    this.skipped.set(reason, (this.skipped.get(reason) ?? 0) + 1);
    return false;
  }

  /** Puts back a frame the broker never read (`sent`: it went out on a connection that closed first). */
  requeue(sent: Sent, wasSent = true): void {
    sent.giveUpAt = undefined;
    if (wasSent) this.resends += 1;
    this.requeued.push(sent);
  }

  wrote(sent: Sent): void {
    this.writes += 1;
    if (sent.analysis === undefined || sent.analysis.kind === 'close') return;
    for (const batch of sent.analysis.batches) {
      if (!batch.valid || batch.digest === undefined) continue;
      acceptable.add(batch.digest);
      const key = tp(batch.topic, batch.partition);
      this.written.set(key, (this.written.get(key) ?? 0) + batch.records);
    }
  }

  done(sent: Sent): void {
    if (sent.probe === true) {
      this.probes += 1;
      return;
    }
    this.processed.set(sent.frame.category, (this.processed.get(sent.frame.category) ?? 0) + 1);
  }

  anomaly(what: string, sent: Sent, detail = ''): void {
    if (this.anomalies.length < 200) this.anomalies.push({ what, category: sent.frame.category, kind: sent.frame.kind, frame: hex(sent.frame.bytes), detail });
  }

  /** Checks one response against the request it answers. */
  check(sent: Sent, frame: Buffer): void {
    const analysis = sent.analysis;
    if (analysis === undefined || analysis.kind === 'close') return;
    const reader = new WireReader(frame, 4);
    let body: unknown;
    try {
      // Header v0, or v1 (a TAG_BUFFER after the correlation id) for a flexible version; the ApiVersions fallback is v0.
      decodeResponseHeader(reader, analysis.fallback ? 0 : responseHeaderVersion(analysis.api.apiKey, analysis.responseVersion));
      body = decodeResponseBody(analysis.api, analysis.responseVersion, reader);
    } catch (error) {
      this.anomaly(`response does not decode as ${analysis.api.name} v${analysis.responseVersion}`, sent, `${(error as Error).message}; response ${hex(frame)}`);
      return;
    }
    if (reader.remaining() !== 0) this.anomaly('response has trailing bytes', sent, hex(frame));
    if (analysis.api.apiKey === ApiVersionsApi.apiKey) {
      const response = body as ApiVersionsResponse;
      const expected = analysis.fallback ? KafkaErrorCode.UNSUPPORTED_VERSION : KafkaErrorCode.NONE;
      if (response.errorCode !== expected) this.anomaly(`ApiVersions answered error ${response.errorCode}, not ${expected}`, sent, hex(frame));
      return;
    }
    if (analysis.api.apiKey !== ProduceApi.apiKey) return;
    const partitions = (body as ProduceResponse).responses.flatMap((topic) => topic.partitionResponses.map((partition) => ({ topic: topic.name, ...partition })));
    if (partitions.length !== analysis.batches.length) {
      this.anomaly('Produce response does not list every partition of the request', sent, hex(frame));
      return;
    }
    partitions.forEach((answer, index) => {
      const batch = analysis.batches[index];
      if (batch === undefined) return;
      this.produceErrors.set(answer.errorCode, (this.produceErrors.get(answer.errorCode) ?? 0) + 1);
      if (answer.topic !== batch.topic || answer.index !== batch.partition) this.anomaly('Produce response partitions out of order', sent, hex(frame));
      if (answer.errorCode === 0 && !batch.valid) this.anomaly(`a batch the validator refuses (${batch.errorCode}) was acknowledged (appended)`, sent, hex(frame));
      if (batch.valid && VALIDATION_CODES.has(answer.errorCode)) this.anomaly(`a batch the validator accepts was refused with ${answer.errorCode}`, sent, answer.errorMessage ?? '');
      if (!batch.valid && VALIDATION_CODES.has(answer.errorCode) && answer.errorCode !== batch.errorCode) this.anomaly(`refused with ${answer.errorCode}, the validator says ${batch.errorCode}`, sent, answer.errorMessage ?? '');
      if (batch.disagreement !== undefined) this.anomaly(`validator and reference disagree: ${batch.disagreement}`, sent);
      if (sent.frame.expectedError !== undefined && answer.errorCode !== sent.frame.expectedError) {
        this.anomaly(`corrupt batch answered error ${answer.errorCode}, not ${sent.frame.expectedError}`, sent, answer.errorMessage ?? '');
      }
      if (answer.errorCode === 0 && batch.valid) {
        const key = tp(batch.topic, batch.partition);
        this.acked.set(key, (this.acked.get(key) ?? 0) + batch.records);
        const ranges = this.ackedRanges.get(key) ?? [];
        ranges.push([Number(answer.baseOffset), Number(answer.baseOffset) + batch.records]);
        if (batch.digest !== undefined) acknowledgedBatches.push({ key, baseOffset: Number(answer.baseOffset), digest: batch.digest });
        this.ackedRanges.set(key, ranges);
      }
    });
  }
}

/** One connection: sends frames with a window, matches responses in order, settles when it closes. */
function runConnection(storm: Storm, port: number): Promise<void> {
  return new Promise((resolve) => {
    storm.connections += 1;
    const socket = createConnection({ host: LOOPBACK, port });
    socket.setNoDelay(true);
    const pending: Sent[] = [];
    let chunks: Buffer[] = [];
    let buffered = 0;
    let sending = true;
    let clientClosed = false;
    let lastProgress = Date.now();
    // For the report of a connection that closed unexpectedly.
    let socketError = '';
    let received = 0;
    const history: string[] = [];

    const send = (sent: Sent): void => {
      if (pending.length === 0) lastProgress = Date.now();
      pending.push(sent);
      history.push(`${sent.frame.category}/${sent.frame.kind}/${sent.analysis?.kind ?? sent.frame.handling}`);
      storm.inFlight += 1;
      storm.wrote(sent);
      socket.write(sent.frame.bytes);
      const { handling } = sent.frame;
      if (handling === 'raw') {
        // The broker can only wait for the rest of a lying frame: end our side, it must close.
        sending = false;
        socket.end();
      } else if (handling === 'close' || sent.analysis?.kind === 'close') {
        sending = false;
      } else if (sent.analysis !== undefined && fetchWaitMs(sent.analysis) > LONG_POLL_GIVE_UP_MS) {
        sending = false;
        sent.giveUpAt = Date.now() + LONG_POLL_GIVE_UP_MS;
      }
    };

    // A lying size prefix is refused as soon as its 4 bytes arrive, before the requests ahead of
    // it have been handled (their answers are dropped with the connection), so such a frame is
    // held until everything before it has been answered. An acks=0 Produce is never answered:
    // when nothing answerable follows it, a probe does.
    let held: Sent | undefined;
    const onlySilent = (): boolean => pending.length > 0 && pending.every((sent) => sent.analysis?.kind === 'silent-or-close');
    const probe = (): void => {
      const frame: FuzzFrame = { category: 'valid', kind: 'probe', bytes: framed(requestBody(ApiVersionsApi, 0, storm.probeCorrelationId(), {})), handling: 'analyze', expectedError: undefined };
      send({ frame, analysis: analyzeFrame(frame.bytes, prediction), probe: true, giveUpAt: undefined });
    };
    const pump = (): void => {
      while (sending && pending.length < WINDOW) {
        const next = held ?? storm.next();
        held = undefined;
        if (next === undefined) {
          sending = false;
          if (onlySilent()) probe();
          break;
        }
        if (next.frame.handling !== 'analyze' && pending.length > 0) {
          held = next;
          if (onlySilent()) probe();
          return;
        }
        send(next);
      }
      if (!sending && pending.length === 0 && !socket.destroyed && !socket.writableEnded) socket.end();
    };

    const finish = (sent: Sent): void => {
      storm.inFlight -= 1;
      storm.done(sent);
    };

    const onResponse = (frame: Buffer): void => {
      storm.responses += 1;
      received += 1;
      lastProgress = Date.now();
      const correlationId = frame.readInt32BE(4);
      while (pending[0]?.analysis?.kind === 'silent-or-close') {
        const silent = pending.shift();
        if (silent !== undefined) finish(silent);
      }
      const head = pending[0];
      if (head === undefined) {
        storm.anomalies.push({ what: 'a response with no request outstanding', category: 'valid', kind: '', frame: '', detail: hex(frame) });
        return;
      }
      if (head.frame.handling === 'raw') {
        storm.rawResponses += 1;
        return;
      }
      if (head.frame.handling === 'close' || head.analysis === undefined || head.analysis.kind === 'close') {
        storm.anomaly('answered a frame it must close the connection on', head, hex(frame));
        return;
      }
      if (head.analysis.header.correlationId !== correlationId) {
        storm.anomaly(`response correlation id ${correlationId}, expected ${head.analysis.header.correlationId}`, head, hex(frame));
        return;
      }
      pending.shift();
      storm.check(head, frame);
      finish(head);
    };

    socket.on('connect', pump);
    socket.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      buffered += chunk.length;
      while (buffered >= 4) {
        const joined = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks);
        chunks = [joined];
        const size = joined.readInt32BE(0);
        if (size < 4 || size > MAX_RESPONSE_BYTES) {
          const head = pending[0];
          storm.anomalies.push({ what: `response frame declares ${size} bytes`, category: head?.frame.category ?? 'valid', kind: head?.frame.kind ?? '', frame: head === undefined ? '' : hex(head.frame.bytes), detail: hex(joined) });
          socket.destroy();
          return;
        }
        if (buffered < 4 + size) break;
        const frame = joined.subarray(0, 4 + size);
        chunks = [joined.subarray(4 + size)];
        buffered -= 4 + size;
        onResponse(frame);
      }
      pump();
    });
    socket.on('error', (error: NodeJS.ErrnoException) => {
      socketError = error.code ?? error.message;
    });

    const watchdog = setInterval(() => {
      const head = pending.find((sent) => sent.analysis?.kind !== 'silent-or-close') ?? pending[0];
      if (head === undefined) return;
      if (head.giveUpAt !== undefined && Date.now() > head.giveUpAt) {
        storm.givenUp += 1;
        clientClosed = true;
        socket.destroy();
      } else if (Date.now() - lastProgress > HANG_MS) {
        const what = head.frame.handling === 'analyze' && head.analysis?.kind !== 'close' ? 'no answer' : 'connection not closed';
        storm.anomaly(`${what} after ${HANG_MS} ms`, head, `received=${received} last sent=${history.slice(-12).join(' | ')} pending=${pending.map((p) => `${p.frame.category}/${p.frame.kind}/${p.analysis?.kind ?? p.frame.handling}`).join(', ')}`);
        clientClosed = true;
        socket.destroy();
      }
    }, 100);

    socket.on('close', () => {
      clearInterval(watchdog);
      if (!clientClosed) storm.closedByBroker += 1;
      // Requests are handled in order: everything after the one that ended the connection was
      // never read, and goes back to be sent on another connection.
      let ended = false;
      for (const sent of pending) {
        if (ended) {
          storm.inFlight -= 1;
          if (sent.probe !== true) storm.requeue(sent);
          continue;
        }
        const expectsAnswer = sent.frame.handling === 'analyze' && sent.analysis?.kind === 'respond';
        if (expectsAnswer && !clientClosed && sent.giveUpAt === undefined) storm.anomaly('connection closed instead of an answer', sent, `error=${socketError} received=${received} history=${history.join(' | ')} pending=${pending.map((p) => `${p.frame.category}/${p.frame.kind}/${p.analysis?.kind ?? p.frame.handling}`).join(', ')}`);
        finish(sent);
        ended = true;
      }
      if (held !== undefined) storm.requeue(held, false);
      resolve();
    });
  });
}

async function worker(storm: Storm, port: number): Promise<void> {
  while (!storm.finished) {
    await runConnection(storm, port);
    // Frames put back by another connection may still be on their way.
    if (!storm.finished && storm.inFlight > 0) await sleep(1);
  }
}

interface StoredSummary {
  readonly logs: number;
  readonly batches: number;
  readonly bytes: number;
  readonly problems: string[];
  readonly logEndOffsets: Map<string, number>;
}

/**
 * verifyBatches over every segment of every log, plus: each stored batch is one the test sent as
 * acceptable, the validator accepts it as stored and — with its base offset zeroed — as produced,
 * without rewriting a byte; and every acknowledged batch is stored, byte for byte, at its offset.
 */
async function verifyStoredLogs(broker: Broker): Promise<StoredSummary> {
  const problems: string[] = [];
  const storedDigests = new Map<string, string>();
  const { validation } = loadedValidation;
  const logEndOffsets = new Map<string, number>();
  let batches = 0;
  let bytes = 0;
  const logs = broker.logManager.allLogs();
  for (const log of logs) {
    await log.flush();
    let expected = log.logStartOffset;
    const files = readdirSync(log.directory).filter((name) => /^\d{20}\.log$/.test(name)).sort();
    for (const file of files) {
      const base = Number(file.slice(0, 20));
      if (base !== expected) problems.push(`${log.name}: segment ${file} starts at ${base}, expected ${expected}`);
      const path = join(log.directory, file);
      const fd = openSync(path, 'r');
      const found: BatchInfo[] = [];
      try {
        const size = fstatSync(fd).size;
        bytes += size;
        const scan = await verifyBatches(fd, 0, size, base, MAX_BATCH_BYTES, (info) => found.push(info));
        if (scan.damage !== undefined) problems.push(`${log.name}/${file}: ${scan.damage.reason} at byte ${scan.damage.position}`);
      } finally {
        closeSync(fd);
      }
      const content = readFileSync(path);
      for (const info of found) {
        const digest = batchDigest(content.subarray(info.position, info.position + info.size));
        const bytes = content.subarray(info.position, info.position + info.size);
        if (!acceptable.has(digest)) problems.push(`${log.name}/${file}: batch at offset ${info.baseOffset} was never sent as an acceptable batch: ${hex(bytes)}`);
        storedDigests.set(`${tp(log.topic, log.partition)}@${info.baseOffset}`, digest);
        const asStored = outcome(() => validation.validateStoredBatch(Buffer.from(bytes)));
        if (asStored !== 'NONE') problems.push(`${log.name}/${file}: validateStoredBatch refuses the batch at offset ${info.baseOffset} (${asStored}): ${hex(bytes)}`);
        const asProduced = Buffer.from(bytes);
        asProduced.writeBigInt64BE(0n, 0);
        const before = Buffer.from(asProduced);
        const verdict = outcome(() => validation.validateProducerBatch(asProduced, { ...prediction.rules, allowZstd: true, now: Date.now() }));
        if (verdict !== 'NONE') problems.push(`${log.name}/${file}: validateProducerBatch refuses the stored batch at offset ${info.baseOffset} (${verdict}): ${hex(bytes)}`);
        else if (!asProduced.equals(before)) problems.push(`${log.name}/${file}: the validator would rewrite the stored batch at offset ${info.baseOffset}`);
      }
      batches += found.length;
      const last = found[found.length - 1];
      expected = last === undefined ? base : last.lastOffset + 1;
    }
    if (expected !== log.logEndOffset) problems.push(`${log.name}: batches end at ${expected}, log end offset is ${log.logEndOffset}`);
    logEndOffsets.set(tp(log.topic, log.partition), log.logEndOffset);
  }
  for (const acked of acknowledgedBatches) {
    const stored = storedDigests.get(`${acked.key}@${acked.baseOffset}`);
    if (stored === undefined) problems.push(`${acked.key}: no stored batch at acknowledged offset ${acked.baseOffset}`);
    else if (stored !== acked.digest) problems.push(`${acked.key}: the batch at acknowledged offset ${acked.baseOffset} is not the bytes predicted (sha1 ${stored}, expected ${acked.digest})`);
  }
  return { logs: logs.length, batches, bytes, problems, logEndOffsets };
}

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

  it(`survives ${TARGET_FRAMES.toLocaleString('en')} malformed or mutated frames: answers or closes, bounded memory, nothing invalid appended`, async () => {
    const broker = handle.broker;
    const storm = new Storm();
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
      await Promise.all(Array.from({ length: CONNECTIONS }, () => worker(storm, broker.port)));
    } finally {
      clearTimeout(budget);
      clearInterval(sampler);
    }
    const seconds = (Date.now() - started) / 1000;
    drainLog();

    const stillOpen = (await waitFor(() => (openConnections(broker) ?? 0) === 0, 10_000)) ? 0 : openConnections(broker);
    const stored = await verifyStoredLogs(broker);
    collectGarbage();
    const after = process.memoryUsage();

    const anomalyKinds = new Map<string, number>();
    for (const anomaly of storm.anomalies) anomalyKinds.set(`${anomaly.what.slice(0, 80)} [${anomaly.category}/${anomaly.kind}]`, (anomalyKinds.get(`${anomaly.what.slice(0, 80)} [${anomaly.category}/${anomaly.kind}]`) ?? 0) + 1);
    const report = {
      seed: SEED,
      validator: loadedValidation.source,
      acknowledgedBatches: acknowledgedBatches.length,
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
            return [key, { setup: setupRecords.get(key) ?? 0, acknowledged: storm.acked.get(key) ?? 0, acceptableWritten: storm.written.get(key) ?? 0, logEndOffset: stored.logEndOffsets.get(key) }];
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

    // The storm's topics grew only by appends the test can account for: at least every
    // acknowledged one, at most every acceptable batch written (acks=0 and lost answers in between).
    for (const topic of STORM_TOPICS) {
      for (let partition = 0; partition < topic.partitions; partition += 1) {
        const key = tp(topic.name, partition);
        const end = stored.logEndOffsets.get(key) ?? -1;
        const setup = setupRecords.get(key) ?? 0;
        expect(end, key).toBeGreaterThanOrEqual(setup + (storm.acked.get(key) ?? 0));
        expect(end, key).toBeLessThanOrEqual(setup + (storm.written.get(key) ?? 0));
        const ranges = [...(storm.ackedRanges.get(key) ?? [])].sort((a, b) => a[0] - b[0]);
        let previousEnd = setup;
        for (const [from, to] of ranges) {
          expect(from, `${key}: acknowledged appends overlap`).toBeGreaterThanOrEqual(previousEnd);
          previousEnd = to;
        }
        expect(previousEnd, key).toBeLessThanOrEqual(end);
      }
    }
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
