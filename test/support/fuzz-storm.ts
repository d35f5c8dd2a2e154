/**
 * The fuzz storm (reliability.md H1–H5), shared by test/integration/broker/fuzz.test.ts (100,000
 * frames against a broker in the test process) and `npm run chaos -- fuzz` (a million against a
 * broker process): frames from the seeded generator (fuzz-frames.ts) sent over many connections,
 * each with an honest size prefix decoded first by the protocol layer's own decoders, which
 * predicts what the broker must do: answer it (a well-formed response of that API and version, in
 * order), or close the connection; for each produced batch the record validator predicts whether
 * it is appended, the error code when it is not, and the exact bytes stored when it is.
 * Deviations are collected as anomalies; `verifyStoredLogs` afterwards checks every stored batch.
 *
 * Well-formed but expensive requests are kept out of the storm (see `Storm.admit`): CreateTopics
 * for more than a few partitions, and topic creation beyond a budget of names.
 *
 * A captured idempotent producer's batch (fuzz-captured.ts: the Java producer's), replayed, is a
 * duplicate the broker answers with error 0 and the original's offsets, appending nothing: the
 * storm counts an acknowledgement again at the same offset, with the same bytes, as a duplicate.
 */
import { closeSync, fstatSync, openSync, readdirSync, readFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { join } from 'node:path';
import { ApiVersionsApi, CreateTopicsApi, ProduceApi, type ApiVersionsResponse, type ProduceRequest, type ProduceResponse } from '../../src/protocol/apis/index.js';
import { decodeResponseHeader, responseHeaderVersion } from '../../src/protocol/headers.js';
import { KafkaErrorCode } from '../../src/protocol/kafka-errors.js';
import { PRODUCER_ID_OFFSET } from '../../src/protocol/record-batch.js';
import { decodeResponseBody } from '../../src/protocol/schema.js';
import { WireReader } from '../../src/protocol/wire.js';
import { verifyBatches, type BatchInfo } from '../../src/storage/batch-scan.js';
import { LOOPBACK } from '../services/network.js';
import { outcome, type BatchValidation } from './batch-rules.js';
import type { SeedFrame } from './fuzz-captured.js';
import {
  FRAME_CATEGORIES,
  FrameFactory,
  Prng,
  analyzeFrame,
  batchDigest,
  fetchWaitMs,
  framed,
  requestBody,
  topicsCreatedBy,
  topicsDeletedBy,
  type BatchPrediction,
  type FrameAnalysis,
  type FrameCategory,
  type FuzzFrame,
  type FuzzTopic,
} from './fuzz-frames.js';

/** Connections open at once, and requests in flight on each (below the broker's 32, so it never pauses reading). */
export const STORM_CONNECTIONS = 8;
const WINDOW = 8;
/** A connection with a request outstanding and no progress for this long is a hang. */
const HANG_MS = 5_000;
/** Fetches that may park longer than this are abandoned by the client (closing the connection). */
const LONG_POLL_GIVE_UP_MS = 300;
/** Well-formed requests that would create topics with more partitions than this are not sent (see `admit`). */
const MAX_CREATED_PARTITIONS = 4;
/** Distinct topic names the storm may cause to be created (Metadata auto-creation, CreateTopics). */
const TOPIC_NAME_BUDGET = 300;
export const MAX_BATCH_BYTES = 1_048_588;
const MAX_RESPONSE_BYTES = 64 * 1024 * 1024;

/** Topics that exist before the storm (the captured corpus uses the same); DeleteTopics frames naming them are not sent. */
export const STORM_TOPICS: readonly FuzzTopic[] = [
  { name: 'storm-a', partitions: 3 },
  { name: 'storm-b', partitions: 2 },
];
export const SCRATCH_TOPICS = Array.from({ length: 6 }, (_, i) => `scratch-${i}`);

/** Error codes of the record validator: a broker answering one of these has judged the batch. */
const VALIDATION_CODES: ReadonlySet<number> = new Set([
  KafkaErrorCode.CORRUPT_MESSAGE,
  KafkaErrorCode.MESSAGE_TOO_LARGE,
  KafkaErrorCode.INVALID_TIMESTAMP,
  KafkaErrorCode.UNSUPPORTED_COMPRESSION_TYPE,
  KafkaErrorCode.INVALID_RECORD,
]);

export interface StormOptions {
  readonly seed: number;
  /** Malformed or mutated frames to send (valid ones come on top). */
  readonly target: number;
  /** How the broker's answers to produced batches are predicted. */
  readonly prediction: BatchPrediction;
  readonly captured?: readonly SeedFrame[];
  readonly connections?: number;
}

/** What every storm and its setup wrote: the checks of `verifyStoredLogs` start from it. */
export class StormLedger {
  /** Every acknowledged batch: where it was appended and the digest of what must be stored there. */
  readonly acknowledgedBatches: { key: string; baseOffset: number; digest: string }[] = [];
  /** Digests of every batch the append validation accepts that was ever sent (setup included). */
  readonly acceptable = new Set<string>();
  /** Records appended at setup, per `topic/partition`. */
  readonly setupRecords = new Map<string, number>();
  /** `key@offset` → digest of the acknowledged batches, to tell a duplicate from a second append. */
  readonly acknowledgedAt = new Map<string, string>();
}

export function tp(topic: string, partition: number): string {
  return `${topic}/${partition}`;
}

export function hex(bytes: Buffer, limit = 512): string {
  const shown = bytes.subarray(0, limit).toString('hex');
  return bytes.length > limit ? `${shown}… (${bytes.length} bytes)` : shown;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
export interface Sent {
  readonly frame: FuzzFrame;
  readonly analysis: FrameAnalysis | undefined;
  /** Not a fuzz frame: an ApiVersions request that shows the acks=0 Produce requests before it were taken without closing. */
  readonly probe?: boolean;
  /** Client-side give-up time for a long-polling fetch. */
  giveUpAt: number | undefined;
}

export interface Anomaly {
  readonly what: string;
  readonly category: FrameCategory;
  readonly kind: string;
  readonly frame: string;
  readonly detail: string;
}

export class Storm {
  private readonly factory: FrameFactory;
  private readonly requeued: Sent[] = [];
  private readonly creatableNames = new Set<string>([...STORM_TOPICS.map((topic) => topic.name), ...SCRATCH_TOPICS]);
  private issuedMalformed = 0;
  private stopIssuing = false;
  inFlight = 0;

  readonly processed = new Map<FrameCategory, number>(FRAME_CATEGORIES.map((category) => [category, 0]));
  /** Acknowledgements of a batch already acknowledged at the same offset with the same bytes (idempotent retries). */
  duplicates = 0;
  readonly prediction: BatchPrediction;
  readonly connectionsAtOnce: number;
  private readonly target: number;

  constructor(
    options: StormOptions,
    readonly ledger: StormLedger,
  ) {
    this.factory = new FrameFactory(new Prng(options.seed), { topics: STORM_TOPICS, scratchTopics: SCRATCH_TOPICS, ...(options.captured === undefined ? {} : { captured: options.captured }) });
    this.prediction = options.prediction;
    this.target = options.target;
    this.connectionsAtOnce = options.connections ?? STORM_CONNECTIONS;
  }
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
    return (this.stopIssuing || this.issuedMalformed >= this.target) && this.requeued.length === 0 && this.inFlight === 0;
  }

  /** The next frame to send: one put back by a closed connection, else a new one. */
  next(): Sent | undefined {
    const again = this.requeued.shift();
    if (again !== undefined) return again;
    while (!this.stopIssuing && this.issuedMalformed < this.target) {
      const frame = this.factory.next();
      const analysis = frame.handling === 'analyze' ? analyzeFrame(frame.bytes, this.prediction) : undefined;
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
      this.ledger.acceptable.add(batch.digest);
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
    const produced = (analysis.request as ProduceRequest).topicData.flatMap((topic) => topic.partitionData.map((partition) => partition.records));
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
        const at = `${key}@${Number(answer.baseOffset)}`;
        const earlier = this.ledger.acknowledgedAt.get(at);
        if (earlier !== undefined) {
          // Only an idempotent producer's retry may be acknowledged at an offset already taken, and only with the same bytes.
          if (earlier !== batch.digest || !hasProducerId(produced[index])) this.anomaly(`two different batches acknowledged at ${at}`, sent, hex(frame));
          else this.duplicates += 1;
          return;
        }
        if (batch.digest !== undefined) this.ledger.acknowledgedAt.set(at, batch.digest);
        this.acked.set(key, (this.acked.get(key) ?? 0) + batch.records);
        const ranges = this.ackedRanges.get(key) ?? [];
        ranges.push([Number(answer.baseOffset), Number(answer.baseOffset) + batch.records]);
        if (batch.digest !== undefined) this.ledger.acknowledgedBatches.push({ key, baseOffset: Number(answer.baseOffset), digest: batch.digest });
        this.ackedRanges.set(key, ranges);
      }
    });
  }
}

/** One connection: sends frames with a window, matches responses in order, settles when it closes. */
function runConnection(storm: Storm, port: number): Promise<void> {
  const prediction = storm.prediction;
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

/** Whether `batch` carries a producer id (an idempotent producer's batch). */
function hasProducerId(batch: Buffer | null | undefined): boolean {
  return batch !== null && batch !== undefined && batch.length >= PRODUCER_ID_OFFSET + 8 && batch.readBigInt64BE(PRODUCER_ID_OFFSET) >= 0n;
}

/** Runs the storm against the broker's PLAINTEXT `port` until it has sent its frames, or `stop()`. */
export async function runStorm(storm: Storm, port: number): Promise<void> {
  await Promise.all(Array.from({ length: storm.connectionsAtOnce }, () => worker(storm, port)));
}

export interface StoredSummary {
  readonly logs: number;
  readonly batches: number;
  readonly bytes: number;
  readonly problems: string[];
  readonly logEndOffsets: Map<string, number>;
}

/** A partition log on disk, as `verifyStoredLogs` reads it. */
export interface StoredLog {
  /** `<topic>-<partition>`, for messages. */
  readonly name: string;
  readonly topic: string;
  readonly partition: number;
  readonly directory: string;
  /** From the broker when it runs in this process; else the first segment's base offset. */
  readonly logStartOffset?: number;
  /** From the broker when it runs in this process; else where the stored batches end. */
  readonly logEndOffset?: number;
}

/** The partition logs in a (stopped) broker's data dir: its `<topic>-<partition>` folders. */
export function storedLogsIn(dataDir: string): StoredLog[] {
  return readdirSync(dataDir, { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && /^.+-\d+$/.test(entry.name))
    .map((entry) => {
      const cut = entry.name.lastIndexOf('-');
      return { name: entry.name, topic: entry.name.slice(0, cut), partition: Number(entry.name.slice(cut + 1)), directory: join(dataDir, entry.name) };
    });
}

/**
 * verifyBatches over every segment of every log, plus: each stored batch is one the storm sent as
 * acceptable, the validator accepts it as stored and — with its base offset zeroed — as produced,
 * without rewriting a byte; and every acknowledged batch is stored, byte for byte, at its offset.
 */
export async function verifyStoredLogs(logs: readonly StoredLog[], ledger: StormLedger, prediction: BatchPrediction, validation: BatchValidation): Promise<StoredSummary> {
  const problems: string[] = [];
  const storedDigests = new Map<string, string>();
  const logEndOffsets = new Map<string, number>();
  let batches = 0;
  let bytes = 0;
  for (const log of logs) {
    const files = readdirSync(log.directory).filter((name) => /^\d{20}\.log$/.test(name)).sort();
    let expected = log.logStartOffset ?? (files[0] === undefined ? 0 : Number(files[0].slice(0, 20)));
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
        if (!ledger.acceptable.has(digest)) problems.push(`${log.name}/${file}: batch at offset ${info.baseOffset} was never sent as an acceptable batch: ${hex(bytes)}`);
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
    if (log.logEndOffset !== undefined && expected !== log.logEndOffset) problems.push(`${log.name}: batches end at ${expected}, log end offset is ${log.logEndOffset}`);
    logEndOffsets.set(tp(log.topic, log.partition), log.logEndOffset ?? expected);
  }
  for (const acked of ledger.acknowledgedBatches) {
    const stored = storedDigests.get(`${acked.key}@${acked.baseOffset}`);
    if (stored === undefined) problems.push(`${acked.key}: no stored batch at acknowledged offset ${acked.baseOffset}`);
    else if (stored !== acked.digest) problems.push(`${acked.key}: the batch at acknowledged offset ${acked.baseOffset} is not the bytes predicted (sha1 ${stored}, expected ${acked.digest})`);
  }
  return { logs: logs.length, batches, bytes, problems, logEndOffsets };
}

/**
 * The storm's topics grew only by appends the storm can account for: at least every acknowledged
 * one, at most every acceptable batch written (acks=0 and lost answers in between), and no two
 * acknowledged appends overlap.
 */
export function accountForAppends(storm: Storm, stored: StoredSummary): string[] {
  const problems: string[] = [];
  for (const topic of STORM_TOPICS) {
    for (let partition = 0; partition < topic.partitions; partition += 1) {
      const key = tp(topic.name, partition);
      const end = stored.logEndOffsets.get(key) ?? -1;
      const setup = storm.ledger.setupRecords.get(key) ?? 0;
      const acked = storm.acked.get(key) ?? 0;
      const written = storm.written.get(key) ?? 0;
      if (end < setup + acked) problems.push(`${key}: log end ${end} below the ${setup} set up + ${acked} acknowledged`);
      if (end > setup + written) problems.push(`${key}: log end ${end} above the ${setup} set up + ${written} acceptable records written`);
      const ranges = [...(storm.ackedRanges.get(key) ?? [])].sort((a, b) => a[0] - b[0]);
      let previousEnd = setup;
      for (const [from, to] of ranges) {
        if (from < previousEnd) problems.push(`${key}: acknowledged appends overlap at ${from}`);
        previousEnd = to;
      }
      if (previousEnd > end) problems.push(`${key}: acknowledged up to ${previousEnd}, the log ends at ${end}`);
    }
  }
  return problems;
}
