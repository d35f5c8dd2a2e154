/**
 * Request frames for fuzzing the broker, all drawn from one seeded PRNG (the same seed gives the
 * same frames):
 *
 *   random-body     correct size prefix, random bytes (sometimes behind a served key/version)
 *   random-stream   raw random bytes, the size prefix included
 *   mutated         a valid request of any served API and version, then 1–4 mutations (bit flips,
 *                   byte overwrites, interesting INT16/INT32 values, insertions, deletions,
 *                   duplication, truncation), size prefix recomputed
 *   framing         valid requests behind a lying size prefix: negative, zero, huge, larger or
 *                   smaller than the bytes sent, a TLS ClientHello, an HTTP request
 *   unknown-api     unknown API keys and versions out of the served ranges (ApiVersions v3+ too)
 *   corrupt-batch   well-formed Produce requests whose record batch is wrong in one precise way
 *   inner-batch     well-formed Produce requests whose batch is damaged INSIDE its records, in
 *                   any codec (gzip, snappy, lz4, zstd: damaged, then recompressed), with the CRC
 *                   recomputed (mostly) or left stale: record length and over-long varints, offset
 *                   and timestamp deltas, key/value/header length lies, header count lies,
 *                   RecordsCount/LastOffsetDelta consistent but lying (up to 7ffffffe/7fffffff),
 *                   MaxTimestamp extremes, codec bits changed, decompression bombs, zstd before
 *                   Produce v7, LogAppendTime and control flags, random damage of the plain
 *                   records; and valid compressed batches of every codec
 *   captured        a request a real client sent (kcat, kafkajs, the Java tools: the corpus
 *                   test/support/fuzz-captured.ts loads), replayed as sent or after 1–4 of the
 *                   same mutations; only when the factory is given the corpus
 *   valid           untouched valid requests
 *
 * Valid requests cover every served API and version; the flexible ones (Metadata v9: header v2,
 * compact body) sometimes carry unknown tagged fields, which the broker must skip.
 *
 * `analyzeFrame` predicts what the broker must do with a well-framed frame — answer it, close the
 * connection, or (Produce acks=0) either stay silent or close — by decoding it exactly as the
 * router does, with the protocol layer's own header and schema decoders, and each produced batch
 * with the record validator (src/protocol/batch-validation.ts, or test/support/batch-rules.ts's
 * reference until that is merged) under the broker's rules: what it refuses, with which code, and
 * the exact bytes it stores (MaxTimestamp and CRC rewritten where the validator rewrites them).
 */
import { createHash } from 'node:crypto';
import {
  AlterConfigsApi,
  ApiVersionsApi,
  CreateAclsApi,
  CreatePartitionsApi,
  CreateTopicsApi,
  DeleteAclsApi,
  DeleteGroupsApi,
  DeleteRecordsApi,
  DeleteTopicsApi,
  DescribeAclsApi,
  DescribeConfigsApi,
  DescribeGroupsApi,
  FetchApi,
  FindCoordinatorApi,
  HeartbeatApi,
  IncrementalAlterConfigsApi,
  InitProducerIdApi,
  JoinGroupApi,
  LeaveGroupApi,
  ListGroupsApi,
  ListOffsetsApi,
  MetadataApi,
  OffsetCommitApi,
  OffsetFetchApi,
  OffsetForLeaderEpochApi,
  ProduceApi,
  SaslAuthenticateApi,
  SaslHandshakeApi,
  SUPPORTED_APIS,
  SyncGroupApi,
  findApi,
  type AnyApiSchema,
  type CreatePartitionsRequest,
  type CreateTopicsRequest,
  type DeleteGroupsRequest,
  type DeleteRecordsRequest,
  type DeleteTopicsRequest,
  type DescribeGroupsRequest,
  type FetchRequest,
  type HeartbeatRequest,
  type JoinGroupRequest,
  type LeaveGroupRequest,
  type MetadataRequest,
  type OffsetCommitRequest,
  type OffsetFetchRequest,
  type OffsetForLeaderEpochRequest,
  type ProduceRequest,
  type SyncGroupRequest,
} from '../../src/protocol/apis/index.js';
import { encodeConsumerAssignment, encodeConsumerSubscription } from '../../src/protocol/consumer-protocol.js';
import { decodeRequestHeader, encodeRequestHeader, type RequestHeader } from '../../src/protocol/headers.js';
import { KafkaErrorCode, KafkaProtocolError } from '../../src/protocol/kafka-errors.js';
import {
  ATTRIBUTES_OFFSET,
  BASE_SEQUENCE_OFFSET,
  BATCH_LENGTH_OFFSET,
  PARTITION_LEADER_EPOCH_OFFSET,
  CONTROL_FLAG,
  CRC_OFFSET,
  LAST_OFFSET_DELTA_OFFSET,
  MAGIC_OFFSET,
  PRODUCER_ID_OFFSET,
  RECORDS_COUNT_OFFSET,
  TIMESTAMP_TYPE_FLAG,
  writeBatchCrc,
  type CompressionName,
} from '../../src/protocol/record-batch.js';
import { compress } from '../../src/protocol/compression.js';
import { encodeRecordBatch, type RecordInput } from '../../src/protocol/records.js';
import { ambiguous, outcome, type BatchRules, type BatchValidation } from './batch-rules.js';
import type { SeedFrame } from './fuzz-captured.js';
import { decompressionBomb, encodeRawBatch, type RawBatch, type RawRecord } from './raw-batches.js';
import { decodeRequestBody, encodeRequestBody, isFlexibleVersion, type ApiSchema } from '../../src/protocol/schema.js';
import { MalformedMessageError, WireReader, WireWriter } from '../../src/protocol/wire.js';

/** socket.request.max.bytes, the broker default (100 MiB). */
export const MAX_REQUEST_BYTES = 104_857_600;

// ---------------------------------------------------------------------------------------------
// PRNG

/** mulberry32: small, fast and good enough to drive a fuzzer; deterministic for a seed. */
export class Prng {
  private state: number;

  constructor(seed: number) {
    this.state = seed >>> 0;
  }

  uint32(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (t ^ (t >>> 14)) >>> 0;
  }

  float(): number {
    return this.uint32() / 4_294_967_296;
  }

  /** An integer in [0, n). */
  below(n: number): number {
    return Math.floor(this.float() * n);
  }

  /** An integer in [min, max]. */
  between(min: number, max: number): number {
    return min + this.below(max - min + 1);
  }

  chance(probability: number): boolean {
    return this.float() < probability;
  }

  pick<T>(items: readonly T[]): T {
    const item = items[this.below(items.length)];
    if (item === undefined) throw new Error('pick from an empty list');
    return item;
  }

  weighted<T>(entries: readonly (readonly [T, number])[]): T {
    const total = entries.reduce((sum, [, weight]) => sum + weight, 0);
    let roll = this.float() * total;
    for (const [value, weight] of entries) {
      roll -= weight;
      if (roll < 0) return value;
    }
    const last = entries[entries.length - 1];
    if (last === undefined) throw new Error('weighted pick from an empty list');
    return last[0];
  }

  bytes(count: number): Buffer {
    const bytes = Buffer.allocUnsafe(count);
    for (let i = 0; i < count; i += 1) bytes[i] = this.uint32() & 0xff;
    return bytes;
  }

  /** A length skewed to small values, up to `max`. */
  smallLength(max: number): number {
    return Math.min(max, Math.floor(Math.pow(this.float(), 3) * (max + 1)));
  }
}

// ---------------------------------------------------------------------------------------------
// Frames

export type FrameCategory = 'random-body' | 'random-stream' | 'mutated' | 'framing' | 'unknown-api' | 'corrupt-batch' | 'inner-batch' | 'captured' | 'valid';

export const FRAME_CATEGORIES: readonly FrameCategory[] = ['random-body', 'random-stream', 'mutated', 'framing', 'unknown-api', 'corrupt-batch', 'inner-batch', 'captured', 'valid'];

/**
 * What the client does around a frame:
 *   analyze  the size prefix is honest; analyzeFrame predicts the broker's answer
 *   close    the broker must close the connection on its own, having read only the size prefix
 *   raw      the framing lies in a way the broker can only wait out: the client half-closes after
 *            it and accepts whatever well-formed responses come back
 */
export type FrameHandling = 'analyze' | 'close' | 'raw';

export interface FuzzFrame {
  readonly category: FrameCategory;
  /** What made it, e.g. `negative-size`, `crc-field`, or for mutated frames the API mutated. */
  readonly kind: string;
  /** Exactly what goes on the wire, size prefix included. */
  readonly bytes: Buffer;
  readonly handling: FrameHandling;
  /** corrupt-batch frames: the error code the Produce response must carry for the bad batch. */
  readonly expectedError: number | undefined;
}

export interface FuzzTopic {
  readonly name: string;
  readonly partitions: number;
}

export interface FrameFactoryOptions {
  /** Topics that exist, for Produce, Fetch, ListOffsets and Metadata. */
  readonly topics: readonly FuzzTopic[];
  /** Throwaway names for CreateTopics and DeleteTopics. */
  readonly scratchTopics: readonly string[];
  /** Requests real clients sent (fuzz-captured.ts), for the `captured` class; none: no such frames. */
  readonly captured?: readonly SeedFrame[];
}

const CATEGORY_WEIGHTS: readonly (readonly [FrameCategory, number])[] = [
  ['random-body', 12],
  ['random-stream', 4],
  ['mutated', 36],
  ['framing', 8],
  ['unknown-api', 10],
  ['corrupt-batch', 10],
  ['inner-batch', 20],
  ['valid', 6],
];
/** With a captured corpus: its frames take a share of their own, the rest as above. */
const CAPTURED_WEIGHT = 16;

const SERVED_KEYS = new Set(SUPPORTED_APIS.map((api) => api.apiKey));
const INTERESTING_INT16 = [0, 1, -1, -2, 0x7f, 0x80, 0xff, 0x7fff, -0x8000, 0x100];
/**
 * Group settings for a broker under fuzzing, so a JoinGroup never holds its connection for
 * long: one member per group (a join into an occupied group is refused at once with
 * GROUP_MAX_SIZE_REACHED, a join into an empty one completes at once), no initial delay, and
 * sessions between 1 and 2 s (a mutated timeout outside is refused), so the member a fuzz join
 * left behind expires quickly.
 */
export const FUZZ_GROUP_SETTINGS: Readonly<Record<string, string>> = {
  'group.max.size': '1',
  'group.min.session.timeout.ms': '1000',
  'group.max.session.timeout.ms': '2000',
  'group.initial.rebalance.delay.ms': '0',
};
const FUZZ_SESSION_TIMEOUT_MS = 1500;

const INTERESTING_INT32 = [0, 1, -1, -2, 0x7f, 0xff, 0xffff, 0x10000, 0x7fffffff, -0x80000000, 0x7ffffffe, MAX_REQUEST_BYTES, MAX_REQUEST_BYTES + 1];
const CLIENT_IDS: readonly (string | null)[] = ['fuzz', 'rdkafka', null, '', 'x'.repeat(120), 'ü-client'];

/** Size prefix + body. */
export function framed(body: Buffer, declaredSize = body.length): Buffer {
  const prefix = Buffer.allocUnsafe(4);
  prefix.writeInt32BE(declaredSize | 0, 0);
  return Buffer.concat([prefix, body]);
}

/** Header + body of one request, as a client would send it (no size prefix). */
export function requestBody<Req, Res>(api: ApiSchema<Req, Res>, version: number, correlationId: number, request: Req, clientId: string | null = 'fuzz'): Buffer {
  const writer = new WireWriter();
  encodeRequestHeader(writer, { apiKey: api.apiKey, apiVersion: version, correlationId, clientId });
  encodeRequestBody(api, version, request, writer);
  return writer.toBuffer();
}

/** A legacy MessageSet entry (magic 0 or 1) holding one message with `value` (its CRC is not computed). */
export function legacyMessageSet(magic: 0 | 1, value: Buffer): Buffer {
  const bodyLength = 4 + 1 + 1 + (magic === 1 ? 8 : 0) + 4 + 4 + value.length;
  const bytes = Buffer.alloc(12 + bodyLength);
  bytes.writeBigInt64BE(0n, 0);
  bytes.writeInt32BE(bodyLength, 8);
  let position = 16; // after the CRC, which the broker never gets to check
  bytes.writeInt8(magic, position++);
  bytes.writeInt8(0, position++);
  if (magic === 1) {
    bytes.writeBigInt64BE(1_700_000_000_000n, position);
    position += 8;
  }
  bytes.writeInt32BE(-1, position); // null key
  position += 4;
  bytes.writeInt32BE(value.length, position);
  position += 4;
  value.copy(bytes, position);
  bytes.writeUInt32BE(0xdeadbeef, 12);
  return bytes;
}

export class FrameFactory {
  private correlationId = 1;
  private timestamp = 1_700_000_000_000;
  /** Frames made, per `category/kind`. */
  readonly generated = new Map<string, number>();
  /** Mutations applied to mutated frames, per operation. */
  readonly mutations = new Map<string, number>();
  private readonly weights: readonly (readonly [FrameCategory, number])[];

  constructor(
    private readonly rng: Prng,
    private readonly options: FrameFactoryOptions,
  ) {
    this.weights = (options.captured?.length ?? 0) > 0 ? [...CATEGORY_WEIGHTS, ['captured', CAPTURED_WEIGHT]] : CATEGORY_WEIGHTS;
  }

  nextCorrelationId(): number {
    const id = this.correlationId;
    this.correlationId = (this.correlationId + 1) & 0x7fffffff;
    return id;
  }

  /** The next frame of a weighted-random category. */
  next(): FuzzFrame {
    const category = this.rng.weighted(this.weights);
    switch (category) {
      case 'random-body':
        return this.randomBody();
      case 'random-stream':
        return this.randomStream();
      case 'mutated':
        return this.mutated();
      case 'framing':
        return this.framing();
      case 'unknown-api':
        return this.unknownApi();
      case 'corrupt-batch':
        return this.corruptBatch();
      case 'inner-batch':
        return this.innerBatch();
      case 'captured':
        return this.captured();
      case 'valid': {
        const request = this.validRequest();
        return this.frame('valid', request.api.name, framed(request.body), 'analyze');
      }
    }
  }

  private frame(category: FrameCategory, kind: string, bytes: Buffer, handling: FrameHandling, expectedError?: number): FuzzFrame {
    const key = `${category}/${kind}`;
    this.generated.set(key, (this.generated.get(key) ?? 0) + 1);
    return { category, kind, bytes, handling, expectedError };
  }

  // -- valid requests --------------------------------------------------------------------------

  private topic(): FuzzTopic {
    return this.rng.pick(this.options.topics);
  }

  private partitionOf(topic: FuzzTopic): number {
    // Now and then a partition that does not exist.
    return this.rng.chance(0.05) ? this.rng.pick([topic.partitions, 99, -1]) : this.rng.below(topic.partitions);
  }

  /** One of a few consumer groups the storm's group requests share. */
  private groupId(): string {
    return `fuzz-group-${this.rng.below(8)}`;
  }

  private clientId(): string | null {
    return this.rng.chance(0.7) ? 'fuzz' : this.rng.pick(CLIENT_IDS);
  }

  /** A valid record batch of 1–5 small records. */
  batch(): Buffer {
    const count = this.rng.between(1, 5);
    const records: RecordInput[] = [];
    for (let i = 0; i < count; i += 1) {
      this.timestamp += this.rng.between(0, 10);
      records.push({
        key: this.rng.chance(0.5) ? null : this.rng.bytes(this.rng.between(0, 12)),
        value: this.rng.chance(0.05) ? null : this.rng.bytes(this.rng.smallLength(200)),
        headers: this.rng.chance(0.2) ? [{ key: 'h', value: this.rng.bytes(3) }] : [],
        timestamp: this.timestamp,
      });
    }
    return encodeRecordBatch(records);
  }

  /** 1–6 honest records (keys, values and header values sometimes null) for a field-by-field batch. */
  rawRecords(): RawRecord[] {
    const rng = this.rng;
    const count = rng.between(1, 6);
    const records: RawRecord[] = [];
    let delta = 0n;
    for (let i = 0; i < count; i += 1) {
      delta += BigInt(rng.between(0, 10));
      records.push({
        timestampDelta: delta,
        offsetDelta: i,
        key: rng.chance(0.4) ? null : rng.bytes(rng.between(0, 12)),
        value: rng.chance(0.05) ? null : rng.bytes(rng.smallLength(rng.chance(0.1) ? 3000 : 200)),
        headers: Array.from({ length: rng.weighted([[0, 6], [1, 3], [2, 1]] as const) }, () => ({
          key: Buffer.from(rng.pick(['h', 'trace-id', '', 'ü'])),
          value: rng.chance(0.2) ? null : rng.bytes(rng.between(0, 8)),
        })),
      });
    }
    this.timestamp += Number(delta);
    return records;
  }

  /** A Produce request of one batch to an existing partition. */
  produceBody(version: number, records: Buffer | null, acks: number, correlationId = this.nextCorrelationId()): Buffer {
    const topic = this.topic();
    const request: ProduceRequest = {
      transactionalId: null,
      acks,
      timeoutMs: this.rng.pick([1000, 30_000, 0]),
      topicData: [{ name: topic.name, partitionData: [{ index: this.rng.below(topic.partitions), records }] }],
    };
    return requestBody(ProduceApi, version, correlationId, request, this.clientId());
  }

  /** A valid request of a served API and version (ApiVersions v0–3 included). */
  validRequest(): { api: AnyApiSchema; version: number; body: Buffer } {
    const rng = this.rng;
    const api = rng.weighted<AnyApiSchema>([
      [ProduceApi, 30],
      [FetchApi, 14],
      [MetadataApi, 14],
      [ListOffsetsApi, 10],
      [ApiVersionsApi, 10],
      [CreateTopicsApi, 8],
      [DeleteTopicsApi, 8],
      [DeleteRecordsApi, 2],
      [FindCoordinatorApi, 6],
      [CreatePartitionsApi, 4],
      // Every served API must be made here: validRequestOf loops until it gets the one it wants.
      [InitProducerIdApi, 4],
      [DescribeConfigsApi, 4],
      [AlterConfigsApi, 2],
      [IncrementalAlterConfigsApi, 2],
      [JoinGroupApi, 3],
      [SyncGroupApi, 2],
      [HeartbeatApi, 2],
      [LeaveGroupApi, 2],
      [OffsetCommitApi, 3],
      [OffsetFetchApi, 3],
      [DescribeGroupsApi, 2],
      [ListGroupsApi, 2],
      [DeleteGroupsApi, 2],
      [OffsetForLeaderEpochApi, 2],
      [DescribeAclsApi, 1],
      [CreateAclsApi, 1],
      [DeleteAclsApi, 1],
      // Answered ILLEGAL_SASL_STATE on a listener without SASL (the storm's).
      [SaslHandshakeApi, 1],
      [SaslAuthenticateApi, 1],
    ]);
    const correlationId = this.nextCorrelationId();
    const clientId = this.clientId();
    switch (api.apiKey) {
      case ProduceApi.apiKey: {
        const version = rng.chance(0.85) ? rng.pick([3, 7, 8]) : rng.between(0, 8);
        const acks = rng.weighted([[1, 6], [-1, 3], [0, 1]] as const);
        const topics = [this.topic(), ...(rng.chance(0.15) ? [this.topic()] : [])];
        const request: ProduceRequest = {
          transactionalId: null,
          acks,
          timeoutMs: 30_000,
          topicData: topics.map((topic) => ({
            name: topic.name,
            partitionData: Array.from({ length: rng.chance(0.15) ? 2 : 1 }, () => ({ index: this.partitionOf(topic), records: this.batch() })),
          })),
        };
        return { api, version, body: requestBody(ProduceApi, version, correlationId, request, clientId) };
      }
      case FetchApi.apiKey: {
        const version = rng.chance(0.7) ? 11 : rng.between(4, 11);
        const topic = this.topic();
        const request: FetchRequest = {
          replicaId: -1,
          maxWaitMs: rng.pick([0, 0, 0, 10, 50]),
          minBytes: rng.pick([0, 1, 1, 64]),
          maxBytes: rng.pick([1_048_576, 52_428_800, 1000, 0]),
          isolationLevel: rng.pick([0, 1]),
          sessionId: 0,
          sessionEpoch: -1,
          topics: [{ topic: topic.name, partitions: [{ partition: this.partitionOf(topic), currentLeaderEpoch: -1, fetchOffset: BigInt(rng.pick([0, 0, 1, 3, 10, 1000, -1])), logStartOffset: -1n, partitionMaxBytes: rng.pick([1_048_576, 65_536, 100, 0]) }] }],
          forgottenTopicsData: [],
          rackId: '',
        };
        return { api, version, body: requestBody(FetchApi, version, correlationId, request, clientId) };
      }
      case MetadataApi.apiKey: {
        // v9 is flexible (header v2, compact body): a third of those carry unknown tagged fields
        // the broker must skip, in the header's TAG_BUFFER, the request's, or both.
        const version = rng.chance(0.3) ? 9 : rng.between(0, 9);
        const names = Array.from({ length: rng.between(0, 2) }, () => (rng.chance(0.8) ? this.topic().name : rng.pick(this.options.scratchTopics)));
        const request: MetadataRequest = {
          topics: version >= 1 && rng.chance(0.4) ? null : names.map((name) => ({ name })),
          allowAutoTopicCreation: rng.chance(0.3),
          includeClusterAuthorizedOperations: rng.chance(0.1),
          includeTopicAuthorizedOperations: rng.chance(0.1),
        };
        const body = requestBody(MetadataApi, version, correlationId, request, clientId);
        return { api, version, body: isFlexibleVersion(MetadataApi, version) && rng.chance(0.35) ? this.withUnknownTags(body) : body };
      }
      case ListOffsetsApi.apiKey: {
        const version = rng.between(1, 5);
        const topic = this.topic();
        const timestamp = rng.pick([-1n, -2n, 0n, 1_700_000_000_000n, BigInt(this.timestamp), -3n]);
        const request = { replicaId: -1, isolationLevel: 0, topics: [{ name: topic.name, partitions: [{ partitionIndex: this.partitionOf(topic), currentLeaderEpoch: -1, timestamp }] }] };
        return { api, version, body: requestBody(ListOffsetsApi, version, correlationId, request, clientId) };
      }
      case ApiVersionsApi.apiKey: {
        const version = rng.between(0, 3);
        if (version === 3) return { api, version, body: apiVersionsV3Body(correlationId, clientId ?? 'fuzz') };
        return { api, version, body: requestBody(ApiVersionsApi, version, correlationId, {}, clientId) };
      }
      case CreateTopicsApi.apiKey: {
        const version = rng.between(0, 4);
        const request: CreateTopicsRequest = {
          topics: [
            {
              name: rng.pick(this.options.scratchTopics),
              numPartitions: rng.pick([1, 2, -1]),
              replicationFactor: rng.pick([1, -1, 1, 3]),
              assignments: [],
              configs: rng.chance(0.3) ? [{ name: 'retention.ms', value: rng.pick(['3600000', 'soon', null]) }] : [],
            },
          ],
          timeoutMs: 5000,
          validateOnly: rng.chance(0.3),
        };
        return { api, version, body: requestBody(CreateTopicsApi, version, correlationId, request, clientId) };
      }
      case DeleteTopicsApi.apiKey: {
        const version = rng.between(0, 3);
        const request: DeleteTopicsRequest = { topicNames: Array.from({ length: rng.between(1, 2) }, () => rng.pick(this.options.scratchTopics)), timeoutMs: 5000 };
        return { api, version, body: requestBody(DeleteTopicsApi, version, correlationId, request, clientId) };
      }
      case DeleteRecordsApi.apiKey: {
        // The storm's own topics only get offsets that move nothing (0, or out of range, answered
        // OFFSET_OUT_OF_RANGE), so what it produced stays readable; scratch topics any offset.
        const version = rng.between(0, 1);
        const scratch = rng.chance(0.4);
        const topic = scratch ? { name: rng.pick(this.options.scratchTopics), partitions: 2 } : this.topic();
        const offset = scratch ? BigInt(rng.pick([-1, 0, 1, 5])) : rng.pick([0n, -3n, 1n << 40n]);
        const request: DeleteRecordsRequest = { topics: [{ name: topic.name, partitions: [{ partitionIndex: this.partitionOf(topic), offset }] }], timeoutMs: rng.pick([0, 1000]) };
        return { api, version, body: requestBody(DeleteRecordsApi, version, correlationId, request, clientId) };
      }
      case CreatePartitionsApi.apiKey: {
        // Validate-only: the storm's own topics keep their partition counts.
        const version = rng.between(0, 1);
        const request: CreatePartitionsRequest = { topics: [{ name: this.topic().name, count: rng.between(0, 8), assignments: null }], timeoutMs: 5000, validateOnly: true };
        return { api, version, body: requestBody(CreatePartitionsApi, version, correlationId, request, clientId) };
      }
      case InitProducerIdApi.apiKey: {
        const version = rng.between(0, 1);
        const request = { transactionalId: rng.chance(0.8) ? null : 'fuzz-transaction', transactionTimeoutMs: 60_000 };
        return { api, version, body: requestBody(InitProducerIdApi, version, correlationId, request, clientId) };
      }
      case DescribeConfigsApi.apiKey: {
        const version = rng.between(1, 3);
        const resourceType = rng.weighted([[2, 6], [4, 3], [rng.between(-5, 10), 1]] as const);
        const resourceName = resourceType === 4 ? rng.pick(['0', '1', '', '-1', 'x']) : this.topic().name;
        const configurationKeys = rng.chance(0.5) ? null : [rng.pick(['retention.ms', 'segment.bytes', 'no.such.config', ''])];
        const request = { resources: [{ resourceType, resourceName, configurationKeys }], includeSynonyms: rng.chance(0.5), includeDocumentation: rng.chance(0.5) };
        return { api, version, body: requestBody(DescribeConfigsApi, version, correlationId, request, clientId) };
      }
      case AlterConfigsApi.apiKey: {
        // Validate-only: the storm's own topics keep their settings.
        const version = rng.between(0, 1);
        const request = { resources: [{ resourceType: rng.pick([2, 2, 4, 99]), resourceName: this.topic().name, configs: [this.fuzzConfig()] }], validateOnly: true };
        return { api, version, body: requestBody(AlterConfigsApi, version, correlationId, request, clientId) };
      }
      case IncrementalAlterConfigsApi.apiKey: {
        const configs = [{ ...this.fuzzConfig(), configOperation: rng.between(-1, 4) }];
        const request = { resources: [{ resourceType: rng.pick([2, 2, 4, 99]), resourceName: this.topic().name, configs }], validateOnly: true };
        return { api, version: 0, body: requestBody(IncrementalAlterConfigsApi, 0, correlationId, request, clientId) };
      }
      case JoinGroupApi.apiKey: {
        // A first join ("" member id): v4+ is answered MEMBER_ID_REQUIRED at once; v0–3 joins the
        // group and is answered when its rebalance completes: at the latest when the members that
        // did not rejoin have had their session expire. FUZZ_GROUP_SETTINGS keeps that short.
        const version = rng.between(0, 5);
        const request: JoinGroupRequest = {
          groupId: this.groupId(),
          sessionTimeoutMs: FUZZ_SESSION_TIMEOUT_MS,
          rebalanceTimeoutMs: FUZZ_SESSION_TIMEOUT_MS,
          memberId: '',
          groupInstanceId: null,
          protocolType: 'consumer',
          protocols: [{ name: 'range', metadata: encodeConsumerSubscription({ version: rng.between(0, 3), topics: [this.topic().name] }) }],
        };
        return { api, version, body: requestBody(JoinGroupApi, version, correlationId, request, clientId) };
      }
      case SyncGroupApi.apiKey: {
        const version = rng.between(0, 3);
        const assignment = (): Buffer => {
          const topic = this.topic();
          return encodeConsumerAssignment({ version: rng.between(0, 3), assignedPartitions: [{ topic: topic.name, partitions: [this.partitionOf(topic)] }] });
        };
        const request: SyncGroupRequest = { groupId: this.groupId(), generationId: -1, memberId: '', groupInstanceId: null, assignments: rng.chance(0.5) ? [] : [{ memberId: '', assignment: assignment() }] };
        return { api, version, body: requestBody(SyncGroupApi, version, correlationId, request, clientId) };
      }
      case HeartbeatApi.apiKey: {
        const version = rng.between(0, 3);
        const request: HeartbeatRequest = { groupId: this.groupId(), generationId: -1, memberId: '', groupInstanceId: null };
        return { api, version, body: requestBody(HeartbeatApi, version, correlationId, request, clientId) };
      }
      case LeaveGroupApi.apiKey: {
        // v0–2 send MemberId, v3 Members; re-encoded at another version, the other one is the default.
        const version = rng.between(0, 3);
        const request: LeaveGroupRequest = { groupId: this.groupId(), memberId: '', members: [{ memberId: '', groupInstanceId: null }] };
        return { api, version, body: requestBody(LeaveGroupApi, version, correlationId, request, clientId) };
      }
      case OffsetCommitApi.apiKey: {
        // A simple commit (generation -1, no member), which an Empty group accepts.
        const version = rng.between(2, 7);
        const topic = this.topic();
        const request: OffsetCommitRequest = {
          groupId: this.groupId(),
          generationIdOrMemberEpoch: -1,
          memberId: '',
          groupInstanceId: null,
          retentionTimeMs: -1n,
          topics: [{ name: topic.name, partitions: [{ partitionIndex: this.partitionOf(topic), committedOffset: BigInt(rng.pick([0, 1, 42, 1000])), committedLeaderEpoch: -1, committedMetadata: rng.pick([null, '', 'fuzz']) }] }],
        };
        return { api, version, body: requestBody(OffsetCommitApi, version, correlationId, request, clientId) };
      }
      case OffsetFetchApi.apiKey: {
        const version = rng.between(1, 5);
        const topic = this.topic();
        const request: OffsetFetchRequest = { groupId: this.groupId(), topics: version >= 2 && rng.chance(0.3) ? null : [{ name: topic.name, partitionIndexes: [this.partitionOf(topic)] }] };
        return { api, version, body: requestBody(OffsetFetchApi, version, correlationId, request, clientId) };
      }
      case OffsetForLeaderEpochApi.apiKey: {
        // As a consumer (-1), a follower (a broker id) or the pre-v3 default (-2) would ask.
        const version = rng.between(0, 3);
        const topic = this.topic();
        const request: OffsetForLeaderEpochRequest = {
          replicaId: rng.pick([-1, -2, 0, 1]),
          topics: [{ topic: topic.name, partitions: [{ partition: this.partitionOf(topic), currentLeaderEpoch: rng.pick([-1, 0, 5]), leaderEpoch: rng.pick([0, 1, -1, 0x7fffffff]) }] }],
        };
        return { api, version, body: requestBody(OffsetForLeaderEpochApi, version, correlationId, request, clientId) };
      }
      case DescribeGroupsApi.apiKey: {
        const version = rng.between(0, 4);
        const request: DescribeGroupsRequest = { groups: Array.from({ length: rng.between(1, 2) }, () => this.groupId()), includeAuthorizedOperations: rng.chance(0.5) };
        return { api, version, body: requestBody(DescribeGroupsApi, version, correlationId, request, clientId) };
      }
      case ListGroupsApi.apiKey: {
        const version = rng.between(0, 2);
        return { api, version, body: requestBody(ListGroupsApi, version, correlationId, {}, clientId) };
      }
      case DeleteGroupsApi.apiKey: {
        const version = rng.between(0, 1);
        const request: DeleteGroupsRequest = { groupsNames: Array.from({ length: rng.between(1, 2) }, () => this.groupId()) };
        return { api, version, body: requestBody(DeleteGroupsApi, version, correlationId, request, clientId) };
      }
      case DescribeAclsApi.apiKey:
      case DeleteAclsApi.apiKey: {
        // A fuzzed broker runs without an authorizer: these are answered SECURITY_DISABLED.
        const version = rng.between(0, 1);
        const filter = { resourceTypeFilter: rng.pick([1, 2, 3, 4]), resourceNameFilter: rng.chance(0.5) ? null : this.topic().name, patternTypeFilter: rng.pick([1, 2, 3, 4]), principalFilter: rng.chance(0.5) ? null : 'User:fuzz', hostFilter: null, operation: rng.pick([1, 3, 4]), permissionType: rng.pick([1, 3]) };
        if (api.apiKey === DescribeAclsApi.apiKey) return { api, version, body: requestBody(DescribeAclsApi, version, correlationId, filter, clientId) };
        return { api, version, body: requestBody(DeleteAclsApi, version, correlationId, { filters: [filter] }, clientId) };
      }
      case CreateAclsApi.apiKey: {
        const version = rng.between(0, 1);
        const creation = { resourceType: 2, resourceName: this.topic().name, resourcePatternType: rng.pick([3, 4]), principal: 'User:fuzz', host: '*', operation: rng.pick([3, 4]), permissionType: 3 };
        return { api, version, body: requestBody(CreateAclsApi, version, correlationId, { creations: [creation] }, clientId) };
      }
      case SaslHandshakeApi.apiKey: {
        const version = rng.between(0, 1);
        return { api, version, body: requestBody(SaslHandshakeApi, version, correlationId, { mechanism: rng.chance(0.5) ? 'PLAIN' : 'SCRAM-SHA-512' }, clientId) };
      }
      case SaslAuthenticateApi.apiKey: {
        const version = rng.between(0, 1);
        return { api, version, body: requestBody(SaslAuthenticateApi, version, correlationId, { authBytes: Buffer.from('\u0000fuzz\u0000fuzz') }, clientId) };
      }
      default: {
        const version = rng.between(0, 2);
        return { api: FindCoordinatorApi, version, body: requestBody(FindCoordinatorApi, version, correlationId, { key: 'fuzz-group', keyType: 0 }, clientId) };
      }
    }
  }

  /**
   * A flexible request (header v2 and a body, both with empty TAG_BUFFERs as encodeRequestHeader
   * and the schema write them) with unknown tagged fields in the header's TAG_BUFFER, the body's
   * last one (the request's own), or both.
   */
  withUnknownTags(body: Buffer): Buffer {
    const reader = new WireReader(body);
    decodeRequestHeader(reader);
    const headerEnd = reader.position; // just after the header's TAG_BUFFER, one 0x00 byte
    if (body[headerEnd - 1] !== 0 || body[body.length - 1] !== 0) throw new Error('withUnknownTags needs a flexible request with empty TAG_BUFFERs');
    const where = this.rng.pick(['header', 'body', 'both'] as const);
    const headerTags = where === 'body' ? Buffer.from([0]) : this.unknownTags();
    const bodyTags = where === 'header' ? Buffer.from([0]) : this.unknownTags();
    return Buffer.concat([body.subarray(0, headerEnd - 1), headerTags, body.subarray(headerEnd, body.length - 1), bodyTags]);
  }

  /** A TAG_BUFFER of 1–3 tagged fields no schema knows (ascending tags, 0–9 bytes each). */
  private unknownTags(): Buffer {
    const rng = this.rng;
    const count = rng.between(1, 3);
    const parts = [new WireWriter().unsignedVarint(count).toBuffer()];
    let tag = rng.pick([0, 1, 5, 127, 128, 10_000]);
    for (let i = 0; i < count; i += 1) {
      const data = rng.bytes(rng.smallLength(9));
      parts.push(new WireWriter().unsignedVarint(tag).unsignedVarint(data.length).toBuffer(), data);
      tag += rng.between(1, 300);
    }
    return Buffer.concat(parts);
  }

  // -- categories ------------------------------------------------------------------------------

  private randomBody(): FuzzFrame {
    const rng = this.rng;
    if (rng.chance(0.4)) {
      // A served key and version, then garbage: reaches the schema decoders.
      const api = rng.pick(SUPPORTED_APIS);
      const writer = new WireWriter();
      encodeRequestHeader(writer, { apiKey: api.apiKey, apiVersion: rng.between(api.minVersion, api.maxVersion), correlationId: this.nextCorrelationId(), clientId: this.clientId() });
      return this.frame('random-body', 'served-header', framed(Buffer.concat([writer.toBuffer(), rng.bytes(rng.smallLength(300))])), 'analyze');
    }
    return this.frame('random-body', 'bytes', framed(rng.bytes(rng.smallLength(400))), 'analyze');
  }

  private randomStream(): FuzzFrame {
    return this.frame('random-stream', 'bytes', this.rng.bytes(this.rng.between(1, 512)), 'raw');
  }

  private mutated(): FuzzFrame {
    const { api, body } = this.validRequest();
    const operations = this.rng.weighted([[1, 6], [2, 3], [3, 2], [4, 1]] as const);
    let bytes = body;
    for (let i = 0; i < operations; i += 1) {
      const result = this.mutate(bytes);
      bytes = result.bytes;
      this.mutations.set(result.kind, (this.mutations.get(result.kind) ?? 0) + 1);
    }
    return this.frame('mutated', api.name, framed(bytes), 'analyze');
  }

  /**
   * A captured request: a fifth replayed as the client sent it, the rest mutated like `mutated`
   * frames. Kind: the client run and the API key/version, e.g. `kcat-group/11v5`.
   */
  private captured(): FuzzFrame {
    const rng = this.rng;
    const seed = rng.pick(this.options.captured ?? []);
    const operations = rng.weighted([[0, 5], [1, 9], [2, 4], [3, 2], [4, 1]] as const);
    let bytes = seed.body;
    for (let i = 0; i < operations; i += 1) {
      const result = this.mutate(bytes);
      bytes = result.bytes;
      this.mutations.set(result.kind, (this.mutations.get(result.kind) ?? 0) + 1);
    }
    const api = seed.body.length >= 4 ? `${seed.body.readInt16BE(0)}v${seed.body.readInt16BE(2)}` : 'short';
    return this.frame('captured', `${seed.client}/${api}${operations === 0 ? '' : '/mutated'}`, framed(bytes), 'analyze');
  }

  /** One mutation of `body` (header and body of a request, no size prefix). */
  mutate(body: Buffer): { kind: string; bytes: Buffer } {
    const rng = this.rng;
    const bytes = Buffer.from(body);
    const at = rng.below(Math.max(bytes.length, 1));
    const kind = rng.weighted([
      ['bitflip', 30],
      ['byte', 12],
      ['int16', 10],
      ['int32', 12],
      ['insert', 10],
      ['delete', 10],
      ['truncate', 8],
      ['duplicate', 4],
      ['splice', 4],
    ] as const);
    switch (kind) {
      case 'bitflip':
        if (bytes.length > 0) bytes[at] = (bytes[at] ?? 0) ^ (1 << rng.below(8));
        return { kind, bytes };
      case 'byte':
        if (bytes.length > 0) bytes[at] = rng.pick([0x00, 0xff, 0x7f, 0x80, rng.below(256)]);
        return { kind, bytes };
      case 'int16':
        if (at + 2 <= bytes.length) bytes.writeInt16BE(rng.pick(INTERESTING_INT16), at);
        return { kind, bytes };
      case 'int32':
        if (at + 4 <= bytes.length) {
          const remaining = bytes.length - at - 4;
          bytes.writeInt32BE(rng.pick([...INTERESTING_INT32, remaining, remaining + 1, remaining - 1]) | 0, at);
        }
        return { kind, bytes };
      case 'insert':
        return { kind, bytes: Buffer.concat([bytes.subarray(0, at), rng.bytes(rng.between(1, 16)), bytes.subarray(at)]) };
      case 'delete':
        return { kind, bytes: Buffer.concat([bytes.subarray(0, at), bytes.subarray(at + rng.between(1, 16))]) };
      case 'truncate':
        return { kind, bytes: bytes.subarray(0, at) };
      case 'duplicate': {
        const length = rng.between(1, 32);
        return { kind, bytes: Buffer.concat([bytes.subarray(0, at), bytes.subarray(at, at + length), bytes.subarray(at)]) };
      }
      case 'splice': {
        // The tail of another valid request after the head of this one.
        const other = this.validRequest().body;
        return { kind, bytes: Buffer.concat([bytes.subarray(0, at), other.subarray(rng.below(Math.max(other.length, 1)))]) };
      }
    }
  }

  private framing(): FuzzFrame {
    const rng = this.rng;
    const body = this.validRequest().body;
    const kind = rng.weighted([
      ['negative-size', 14],
      ['zero-size', 8],
      ['huge-size', 14],
      ['int32-max-size', 6],
      ['tls-client-hello', 4],
      ['http-request', 4],
      ['declared-larger', 16],
      ['declared-smaller', 16],
      ['partial-prefix', 6],
      ['at-limit', 4],
    ] as const);
    switch (kind) {
      case 'negative-size':
        return this.frame('framing', kind, framed(body, rng.pick([-1, -2, -0x80000000, -rng.between(1, 0x7fffffff)])), 'close');
      case 'zero-size':
        return this.frame('framing', kind, framed(rng.chance(0.5) ? Buffer.alloc(0) : body, 0), 'close');
      case 'huge-size':
        return this.frame('framing', kind, framed(body, rng.between(MAX_REQUEST_BYTES + 1, 0x7fffffff)), 'close');
      case 'int32-max-size':
        return this.frame('framing', kind, framed(rng.chance(0.5) ? Buffer.alloc(0) : body, 0x7fffffff), 'close');
      case 'tls-client-hello':
        // TLS 1.2 ClientHello record header: reads as a size of 369,295,xxx bytes.
        return this.frame('framing', kind, Buffer.concat([Buffer.from([0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03]), rng.bytes(32)]), 'close');
      case 'http-request':
        return this.frame('framing', kind, Buffer.from('GET / HTTP/1.1\r\nHost: tributary\r\n\r\n'), 'close');
      case 'declared-larger':
        return this.frame('framing', kind, framed(body, body.length + rng.pick([1, 2, 7, 100, 65_536, MAX_REQUEST_BYTES - body.length])), 'raw');
      case 'declared-smaller':
        return this.frame('framing', kind, framed(body, Math.max(0, body.length - rng.between(1, Math.max(1, body.length)))), 'raw');
      case 'partial-prefix':
        return this.frame('framing', kind, framed(body).subarray(0, rng.between(1, 3)), 'raw');
      case 'at-limit':
        return this.frame('framing', kind, framed(body, MAX_REQUEST_BYTES), 'raw');
    }
  }

  private unknownApi(): FuzzFrame {
    const rng = this.rng;
    const correlationId = this.nextCorrelationId();
    const kind = rng.weighted([
      ['unknown-key', 40],
      ['version-too-high', 25],
      ['version-too-low', 15],
      ['api-versions-v3+', 20],
    ] as const);
    const writer = new WireWriter();
    switch (kind) {
      case 'unknown-key': {
        let apiKey = rng.pick([9999, 77, -1, 4, 5, 8, 9, 11, 12, 32, 36, 60, 0x7fff, -0x8000, rng.between(-0x8000, 0x7fff)]);
        while (SERVED_KEYS.has(apiKey)) apiKey = rng.between(21, 0x7fff);
        encodeRequestHeader(writer, { apiKey, apiVersion: rng.between(-1, 12), correlationId, clientId: this.clientId() });
        const tail = rng.chance(0.5) ? this.validRequest().body.subarray(0) : rng.bytes(rng.smallLength(100));
        return this.frame('unknown-api', kind, framed(Buffer.concat([writer.toBuffer(), tail])), 'analyze');
      }
      case 'version-too-high':
      case 'version-too-low': {
        const api = rng.pick(SUPPORTED_APIS.filter((candidate) => candidate.apiKey !== ApiVersionsApi.apiKey || kind === 'version-too-low'));
        const version = kind === 'version-too-high' ? rng.pick([api.maxVersion + 1, api.maxVersion + 2, 12, 0x7fff]) : rng.pick([api.minVersion - 1, -1, -0x8000]);
        encodeRequestHeader(writer, { apiKey: api.apiKey, apiVersion: version, correlationId, clientId: this.clientId() });
        // A body valid for the nearest served version, so only the version is wrong.
        const served = Math.min(Math.max(version, api.minVersion), api.maxVersion);
        const valid = this.validRequestOf(api, served);
        const header = new WireReader(valid);
        decodeRequestHeader(header);
        return this.frame('unknown-api', `${kind}:${api.name}`, framed(Buffer.concat([writer.toBuffer(), valid.subarray(header.position)])), 'analyze');
      }
      case 'api-versions-v3+': {
        const version = rng.pick([3, 3, 4, 5, 0x7fff]);
        const body = apiVersionsV3Body(correlationId, this.clientId() ?? 'fuzz', version);
        return this.frame('unknown-api', kind, framed(rng.chance(0.2) ? Buffer.concat([body, rng.bytes(rng.between(1, 20))]) : body), 'analyze');
      }
    }
  }

  /** A config name and value, valid or not, for the validate-only alter requests. */
  private fuzzConfig(): { name: string; value: string | null } {
    const rng = this.rng;
    const name = rng.pick(['retention.ms', 'segment.bytes', 'cleanup.policy', 'message.timestamp.type', 'no.such.config', '']);
    const value = rng.pick<string | null>(['1000', '-1', 'compact', 'delete', 'LogAppendTime', '1e3', '', null, '99999999999999999999']);
    return { name, value };
  }

  private validRequestOf(api: AnyApiSchema, version: number): Buffer {
    // Bounded: an API validRequest cannot make would otherwise spin here forever, out of reach of
    // vitest's timeout (one synchronous loop).
    for (let attempt = 0; ; attempt += 1) {
      if (attempt === 100_000) throw new Error(`validRequest never makes ${api.name} v${version}: give it a case in validRequest`);
      const candidate = this.validRequest();
      if (candidate.api.apiKey === api.apiKey && candidate.version === version) return candidate.body;
      if (candidate.api.apiKey === api.apiKey && api.apiKey !== ApiVersionsApi.apiKey) {
        // Re-encode the same kind of request at the wanted version (unless it cannot be, as a
        // null Metadata topic list in v0).
        const header = new WireReader(candidate.body);
        const decoded = decodeRequestHeader(header);
        const request = decodeRequestBody(api, candidate.version, header);
        try {
          return requestBody(api, version, decoded.correlationId, request, decoded.clientId);
        } catch {
          continue;
        }
      }
    }
  }

  private innerBatch(): FuzzFrame {
    const rng = this.rng;
    const baseTimestamp = BigInt(this.timestamp);
    const made = innerBatchFor(rng, this.rawRecords(), baseTimestamp, Date.now());
    const acks = rng.weighted([[1, 6], [-1, 3], [0, 1]] as const);
    const body = this.produceBody(made.version, made.batch, acks);
    const kind = `${made.kind}/${made.codec}${made.crc === 'stale' ? '/stale-crc' : ''}`;
    return this.frame('inner-batch', kind, framed(body), 'analyze', acks === 0 ? undefined : made.expectedError);
  }

  private corruptBatch(): FuzzFrame {
    const rng = this.rng;
    const version = rng.pick([3, 7, 8]);
    const acks = rng.pick([1, -1]);
    const batch = this.batch();
    const kind = rng.weighted([
      ['crc-field', 12],
      ['crc-payload', 12],
      ['length-longer', 8],
      ['length-shorter', 8],
      ['truncated', 8],
      ['trailing-bytes', 6],
      ['two-batches', 4],
      ['magic-0', 5],
      ['magic-1', 5],
      ['legacy-message-set', 6],
      ['count-mismatch', 8],
      ['negative-last-offset-delta', 4],
      ['control-flag', 6],
      ['base-offset', 4],
      ['producer-without-sequence', 4],
      ['null-records', 3],
      ['empty-records', 3],
      ['short-garbage', 4],
    ] as const);
    let records: Buffer | null = batch;
    let expected: number = KafkaErrorCode.INVALID_RECORD;
    switch (kind) {
      case 'crc-field':
        batch.writeUInt32BE((batch.readUInt32BE(CRC_OFFSET) ^ (1 << rng.below(32))) >>> 0, CRC_OFFSET);
        expected = KafkaErrorCode.CORRUPT_MESSAGE;
        break;
      case 'crc-payload': {
        const at = ATTRIBUTES_OFFSET + rng.below(batch.length - ATTRIBUTES_OFFSET);
        batch[at] = (batch[at] ?? 0) ^ (1 << rng.below(8));
        expected = KafkaErrorCode.CORRUPT_MESSAGE;
        break;
      }
      case 'length-longer':
        batch.writeInt32BE(batch.readInt32BE(BATCH_LENGTH_OFFSET) + rng.pick([1, 4, 1000, 0x10000000]), BATCH_LENGTH_OFFSET);
        expected = KafkaErrorCode.CORRUPT_MESSAGE;
        break;
      case 'length-shorter':
        batch.writeInt32BE(rng.pick([batch.readInt32BE(BATCH_LENGTH_OFFSET) - rng.between(1, 20), 0, -1, -0x80000000]), BATCH_LENGTH_OFFSET);
        break;
      case 'truncated':
        records = batch.subarray(0, rng.between(0, batch.length - 1));
        expected = KafkaErrorCode.CORRUPT_MESSAGE;
        if (records.length === 0) expected = KafkaErrorCode.INVALID_RECORD; // "carries no records"
        break;
      case 'trailing-bytes':
        records = Buffer.concat([batch, rng.bytes(rng.between(1, 40))]);
        break;
      case 'two-batches':
        records = Buffer.concat([batch, this.batch()]);
        break;
      case 'magic-0':
      case 'magic-1':
        batch.writeInt8(kind === 'magic-0' ? 0 : 1, MAGIC_OFFSET);
        break;
      case 'legacy-message-set':
        // Values of 50+ bytes: at least a batch header long, so the magic is what gets refused.
        records = legacyMessageSet(rng.pick([0, 1] as const), rng.bytes(rng.between(50, 120)));
        break;
      case 'count-mismatch':
        batch.writeInt32BE(batch.readInt32BE(RECORDS_COUNT_OFFSET) + rng.pick([1, -1, 1000, 0x7fffffff - 10]), RECORDS_COUNT_OFFSET);
        writeBatchCrc(batch);
        break;
      case 'negative-last-offset-delta':
        batch.writeInt32BE(-1, LAST_OFFSET_DELTA_OFFSET);
        batch.writeInt32BE(0, RECORDS_COUNT_OFFSET);
        writeBatchCrc(batch);
        break;
      case 'control-flag':
        batch.writeInt16BE(batch.readInt16BE(ATTRIBUTES_OFFSET) | CONTROL_FLAG, ATTRIBUTES_OFFSET);
        writeBatchCrc(batch);
        break;
      case 'base-offset':
        batch.writeBigInt64BE(BigInt(rng.pick([1, 42, -1, 0x7fffffff])), 0);
        break;
      case 'producer-without-sequence':
        batch.writeBigInt64BE(BigInt(rng.between(0, 1000)), PRODUCER_ID_OFFSET);
        batch.writeInt32BE(-1, BASE_SEQUENCE_OFFSET);
        writeBatchCrc(batch);
        break;
      case 'null-records':
        records = null;
        break;
      case 'empty-records':
        records = Buffer.alloc(0);
        break;
      case 'short-garbage':
        records = rng.bytes(rng.between(1, 60));
        expected = KafkaErrorCode.CORRUPT_MESSAGE;
        break;
    }
    const body = this.produceBody(version, records, acks);
    return this.frame('corrupt-batch', kind, framed(body), 'analyze', expected);
  }
}

const CODECS: readonly CompressionName[] = ['none', 'gzip', 'snappy', 'lz4', 'zstd'];
const INT64_MAX = 0x7fff_ffff_ffff_ffffn;
const INT64_MIN = -0x8000_0000_0000_0000n;
/** Future timestamps are at least this far past the after-bound, so the prediction never sits on it. */
const SAFE_FUTURE_MS = 2 * 3_600_000;

type InnerKind =
  | 'valid-compressed'
  | 'record-length'
  | 'overlong-length-varint'
  | 'noncanonical-length-varint'
  | 'offset-delta'
  | 'timestamp-delta'
  | 'key-length'
  | 'value-length'
  | 'header-length'
  | 'header-count'
  | 'record-trailing'
  | 'count-lie'
  | 'max-timestamp'
  | 'codec-bits'
  | 'bomb'
  | 'zstd-old-produce'
  | 'log-append-time'
  | 'control'
  | 'records-damage';

const INNER_KINDS: readonly (readonly [InnerKind, number])[] = [
  ['valid-compressed', 12],
  ['record-length', 8],
  ['overlong-length-varint', 3],
  ['noncanonical-length-varint', 3],
  ['offset-delta', 8],
  ['timestamp-delta', 8],
  ['key-length', 6],
  ['value-length', 6],
  ['header-length', 5],
  ['header-count', 5],
  ['record-trailing', 4],
  ['count-lie', 8],
  ['max-timestamp', 6],
  ['codec-bits', 6],
  ['bomb', 0.12],
  ['zstd-old-produce', 3],
  ['log-append-time', 2],
  ['control', 2],
  ['records-damage', 10],
];

/** One batch damaged inside its records (or a valid compressed one), and the Produce version to send it with. */
export function innerBatchFor(rng: Prng, records: RawRecord[], baseTimestamp: bigint, now: number): { kind: InnerKind; codec: CompressionName; batch: Buffer; version: number; expectedError: number | undefined; crc: 'valid' | 'stale' } {
  const kind = rng.weighted(INNER_KINDS);
  let codec = rng.pick(CODECS);
  const crc: 'valid' | 'stale' = kind !== 'valid-compressed' && rng.chance(0.12) ? 'stale' : 'valid';
  let version = rng.pick([3, 7, 8]);
  let expectedError: number | undefined;
  const spec: { -readonly [K in keyof RawBatch]: RawBatch[K] } = { records, codec, baseTimestamp, crc };
  const index = rng.below(records.length);
  const record = (changes: Partial<RawRecord>): void => {
    records[index] = { ...(records[index] as RawRecord), ...changes };
  };
  switch (kind) {
    case 'valid-compressed':
      if (codec === 'none') spec.codec = codec = rng.pick(['gzip', 'snappy', 'lz4', 'zstd'] as const);
      break;
    case 'record-length':
      record({ lengthAdjust: rng.pick([1, -1, 2, -2, 100, -1000, 0x3fffffff, -0x40000000]) });
      break;
    case 'overlong-length-varint':
      // Six bytes of varint: longer than Kafka reads.
      record({ rawLength: Buffer.from([0x80, 0x80, 0x80, 0x80, 0x80, 0x00]) });
      break;
    case 'noncanonical-length-varint': {
      // The true length in five bytes (continuation bits over zero groups): valid, Kafka reads it.
      const body = encodeRawRecordBodyLength(records[index] as RawRecord);
      const z = body * 2;
      record({ rawLength: Buffer.from([(z & 0x7f) | 0x80, ((z >>> 7) & 0x7f) | 0x80, ((z >>> 14) & 0x7f) | 0x80, ((z >>> 21) & 0x7f) | 0x80, (z >>> 28) & 0x0f]) });
      break;
    }
    case 'offset-delta': {
      const current = (records[index] as RawRecord).offsetDelta;
      record({ offsetDelta: rng.pick([current + 1, current - 1, -1, 0x7fffffff, rng.between(0, 8), records.length]) });
      break;
    }
    case 'timestamp-delta': {
      const future = BigInt(now + SAFE_FUTURE_MS + rng.between(0, 1_000_000_000));
      const target = rng.pick([INT64_MAX, future, -1n, 0n, -BigInt(rng.between(1, 1_000_000_000)), baseTimestamp + BigInt(rng.between(-100_000, 100_000)), INT64_MIN + 1n]);
      record({ timestampDelta: target - baseTimestamp });
      break;
    }
    case 'key-length': {
      const key = (records[index] as RawRecord).key;
      record({ keyLength: rng.pick([-2, -1, 0, (key?.length ?? 0) + 1, (key?.length ?? 0) - 1, 0x7fffffff, -0x80000000]) });
      break;
    }
    case 'value-length': {
      const value = (records[index] as RawRecord).value;
      record({ valueLength: rng.pick([-2, -1, 0, (value?.length ?? 0) + 1, (value?.length ?? 0) - 1, 0x7fffffff]) });
      break;
    }
    case 'header-length': {
      const headers = [...(records[index] as RawRecord).headers];
      if (headers.length === 0) headers.push({ key: Buffer.from('h'), value: Buffer.from('v') });
      const h = rng.below(headers.length);
      const header = headers[h] as (typeof headers)[number];
      headers[h] = rng.chance(0.5) ? { ...header, keyLength: rng.pick([-1, -2, (header.key?.length ?? 0) + 1, 0x7fffffff]) } : { ...header, valueLength: rng.pick([-2, (header.value?.length ?? 0) + 1, (header.value?.length ?? 0) - 1, 0x7fffffff]) };
      record({ headers });
      break;
    }
    case 'header-count': {
      const count = (records[index] as RawRecord).headers.length;
      record({ headerCount: rng.pick([count + 1, count - 1, -1, 0x7fffffff, count + 1000]) });
      break;
    }
    case 'record-trailing':
      record({ trailing: rng.bytes(rng.between(1, 4)) });
      break;
    case 'count-lie': {
      const n = records.length;
      const count = rng.pick([n + 1, n + 2, n + 1000, 0x7fffffff, n > 1 ? n - 1 : n + 1]);
      spec.recordsCount = count;
      spec.lastOffsetDelta = count - 1;
      break;
    }
    case 'max-timestamp':
      spec.maxTimestamp = rng.pick([INT64_MAX, INT64_MIN, -1n, 0n, baseTimestamp - 1n, BigInt(now + 86_400_000)]);
      break;
    case 'codec-bits':
      spec.codecBits = rng.between(0, 7);
      if (spec.codecBits === (CODECS.indexOf(codec) & 7)) spec.codecBits = (spec.codecBits + 1) & 7;
      if (spec.codecBits >= 5 && crc === 'valid' && codec === 'none') expectedError = KafkaErrorCode.UNSUPPORTED_COMPRESSION_TYPE;
      break;
    case 'bomb': {
      const bombCodec = rng.pick(['gzip', 'snappy', 'lz4', 'zstd'] as const);
      spec.codec = codec = bombCodec;
      spec.payload = decompressionBomb(bombCodec);
      version = rng.pick([7, 8]);
      if (crc === 'valid') expectedError = KafkaErrorCode.CORRUPT_MESSAGE;
      break;
    }
    case 'zstd-old-produce':
      spec.codec = codec = 'zstd';
      version = rng.pick([3, 3, 4, 5, 6]);
      if (crc === 'valid') expectedError = KafkaErrorCode.UNSUPPORTED_COMPRESSION_TYPE;
      break;
    case 'log-append-time':
      spec.flags = TIMESTAMP_TYPE_FLAG;
      if (codec === 'zstd') version = rng.pick([7, 8]);
      if (crc === 'valid') expectedError = KafkaErrorCode.INVALID_TIMESTAMP;
      break;
    case 'control':
      spec.flags = CONTROL_FLAG;
      if (codec === 'zstd') version = rng.pick([7, 8]);
      if (crc === 'valid') expectedError = KafkaErrorCode.INVALID_RECORD;
      break;
    case 'records-damage':
      break;
  }
  if (codec === 'zstd' && kind !== 'zstd-old-produce' && version < 7) version = rng.pick([7, 8]);
  let batch: Buffer;
  if (kind === 'records-damage') {
    // Random damage of the plain records, then compressed as the codec says, CRC valid.
    const plain = encodeRawBatch({ ...spec, codec: 'none', crc: 'valid' });
    const section = Buffer.from(plain.subarray(61));
    const damages = rng.between(1, 3);
    for (let i = 0; i < damages; i += 1) {
      const at = rng.below(Math.max(section.length, 1));
      if (rng.chance(0.6)) section[at] = (section[at] ?? 0) ^ (1 << rng.below(8));
      else section[at] = rng.pick([0x00, 0x01, 0x7f, 0x80, 0xff, rng.below(256)]);
    }
    batch = encodeRawBatch({ ...spec, payload: codec === 'none' ? section : compressForTest(codec, section) });
  } else {
    batch = encodeRawBatch(spec);
  }
  return { kind, codec, batch, version, expectedError, crc };
}

function compressForTest(codec: CompressionName, section: Buffer): Buffer {
  return compress(codec, section);
}

/** The body length `encodeRawRecord` writes for `record`, without its lies about the length. */
function encodeRawRecordBodyLength(record: RawRecord): number {
  const encoded = encodeRawBatch({ records: [{ ...record, rawLength: Buffer.alloc(0), lengthAdjust: 0 }], baseTimestamp: 0n });
  return encoded.length - 61;
}

/**
 * ApiVersions v3+ as librdkafka sends it: request header v2 (v1 + an empty tag buffer), then
 * ClientSoftwareName and ClientSoftwareVersion as compact strings and an empty tag buffer.
 */
export function apiVersionsV3Body(correlationId: number, clientId: string, version = 3): Buffer {
  const writer = new WireWriter();
  encodeRequestHeader(writer, { apiKey: ApiVersionsApi.apiKey, apiVersion: version, correlationId, clientId });
  writer.int8(0);
  const name = Buffer.from('tributary-fuzz');
  const softwareVersion = Buffer.from('1.0');
  writer.int8(name.length + 1);
  const parts = [writer.toBuffer(), name, Buffer.from([softwareVersion.length + 1]), softwareVersion, Buffer.from([0])];
  return Buffer.concat(parts);
}

// ---------------------------------------------------------------------------------------------
// Prediction

/** One partition's batch in a well-formed Produce request. */
export interface ProducedBatch {
  readonly topic: string;
  readonly partition: number;
  /** Whether the record validator accepts the bytes under the broker's rules (any acks aside). */
  readonly valid: boolean;
  /** The validator's error code when it refuses (0 when valid). */
  readonly errorCode: number;
  /** Records in the batch when valid. */
  readonly records: number;
  /** sha1 of what a stored copy holds from BatchLength on (after the validator's rewrites), when valid. */
  readonly digest: string | undefined;
  /** The validator and the test's reference disagree about this batch (only when both are given). */
  readonly disagreement?: string;
}

/** How produced batches are judged: the broker's validator (or the reference fallback) and the broker's rules. */
export interface BatchPrediction {
  readonly validation: BatchValidation;
  /** The broker's topic rules; `allowZstd` follows the Produce version and `now` the wall clock. */
  readonly rules: Omit<BatchRules, 'allowZstd' | 'now'>;
  /** The test's reference, to cross-check the validator's acceptance where the brief decides it. */
  readonly reference?: BatchValidation;
}

/** Judges one produced batch: validity, code, and the bytes that would be stored (on a copy). */
export function predictBatch(records: Buffer, produceVersion: number, prediction: BatchPrediction): { valid: boolean; errorCode: number; records: number; digest: string | undefined; disagreement?: string } {
  const rules: BatchRules = { ...prediction.rules, allowZstd: produceVersion >= 7, now: Date.now() };
  const copy = Buffer.from(records);
  let result: { valid: boolean; errorCode: number; records: number; digest: string | undefined };
  try {
    const validated = prediction.validation.validateProducerBatch(copy, rules);
    result = { valid: true, errorCode: 0, records: validated.recordCount, digest: batchDigest(copy) };
  } catch (error) {
    if (!(error instanceof KafkaProtocolError)) throw error;
    result = { valid: false, errorCode: error.kafkaCode, records: 0, digest: undefined };
  }
  if (prediction.reference !== undefined && !ambiguous(records)) {
    const referenceCopy = Buffer.from(records);
    const verdict = outcome(() => prediction.reference?.validateProducerBatch(referenceCopy, rules));
    if ((verdict === 'NONE') !== result.valid) return { ...result, disagreement: `validator ${result.valid ? 'accepts' : `refuses (${result.errorCode})`}, reference ${verdict}` };
    if (result.valid && batchDigest(referenceCopy) !== result.digest) return { ...result, disagreement: 'validator and reference store different bytes' };
  }
  return result;
}

export type FrameAnalysis =
  | { readonly kind: 'close'; readonly reason: string; readonly unexpectedError?: string }
  | {
      /** The broker must answer; for Produce acks=0 it answers nothing, or closes on an error. */
      readonly kind: 'respond' | 'silent-or-close';
      readonly header: RequestHeader;
      readonly api: AnyApiSchema;
      /** The version of the response body (0 for the ApiVersions fallback answer). */
      readonly responseVersion: number;
      readonly fallback: boolean;
      readonly request: unknown;
      readonly batches: readonly ProducedBatch[];
    };

export function batchDigest(batch: Buffer): string {
  // PartitionLeaderEpoch (bytes 12–15, outside the CRC) is the leader's to stamp: a stored batch
  // carries the leader's epoch where the producer sent its own value (Java −1, kafkajs 0).
  return createHash('sha1')
    .update(batch.subarray(BATCH_LENGTH_OFFSET, PARTITION_LEADER_EPOCH_OFFSET))
    .update(batch.subarray(PARTITION_LEADER_EPOCH_OFFSET + 4))
    .digest('hex');
}

/**
 * What the broker must do with a frame whose size prefix is honest (`wire` includes the prefix),
 * decided as RequestRouter.route decides it.
 */
export function analyzeFrame(wire: Buffer, prediction: BatchPrediction): FrameAnalysis {
  const body = wire.subarray(4);
  const reader = new WireReader(body);
  let header: RequestHeader;
  try {
    header = decodeRequestHeader(reader);
  } catch (error) {
    return closeFor('unreadable header', error);
  }
  if (header.apiKey === ApiVersionsApi.apiKey && header.apiVersion > ApiVersionsApi.maxVersion) {
    return { kind: 'respond', header, api: ApiVersionsApi, responseVersion: 0, fallback: true, request: undefined, batches: [] };
  }
  const api = findApi(header.apiKey);
  if (api === undefined) return { kind: 'close', reason: `unknown api key ${header.apiKey}` };
  if (header.apiVersion < api.minVersion || header.apiVersion > api.maxVersion) return { kind: 'close', reason: `${api.name} v${header.apiVersion} not served` };
  let request: unknown;
  try {
    request = decodeRequestBody(api, header.apiVersion, reader);
  } catch (error) {
    return closeFor(`malformed ${api.name} v${header.apiVersion}`, error);
  }
  let batches: ProducedBatch[] = [];
  let kind: 'respond' | 'silent-or-close' = 'respond';
  if (api.apiKey === ProduceApi.apiKey) {
    const produce = request as ProduceRequest;
    const acksValid = produce.acks === 0 || produce.acks === 1 || produce.acks === -1;
    if (produce.acks === 0) kind = 'silent-or-close';
    batches = produce.topicData.flatMap((topic) =>
      topic.partitionData.map((data): ProducedBatch => {
        const records = data.records;
        if (!acksValid) return { topic: topic.name, partition: data.index, valid: false, errorCode: KafkaErrorCode.INVALID_REQUIRED_ACKS, records: 0, digest: undefined };
        if (records === null || records.length === 0) return { topic: topic.name, partition: data.index, valid: false, errorCode: KafkaErrorCode.INVALID_RECORD, records: 0, digest: undefined };
        return { topic: topic.name, partition: data.index, ...predictBatch(records, header.apiVersion, prediction) };
      }),
    );
  }
  return { kind, header, api, responseVersion: header.apiVersion, fallback: false, request, batches };
}

function closeFor(reason: string, error: unknown): FrameAnalysis {
  if (error instanceof MalformedMessageError) return { kind: 'close', reason: `${reason}: ${error.message}` };
  // The router closes on any decode failure, but only MalformedMessageError is a defined one.
  return { kind: 'close', reason, unexpectedError: error instanceof Error ? `${error.name}: ${error.message}` : String(error) };
}

/** Topic names a well-formed request would create (CreateTopics, or Metadata auto-creation), with partition counts. */
export function topicsCreatedBy(analysis: FrameAnalysis, autoCreatePartitions: number): { name: string; partitions: number }[] {
  if (analysis.kind === 'close') return [];
  if (analysis.api.apiKey === CreateTopicsApi.apiKey) {
    const request = analysis.request as CreateTopicsRequest;
    if (analysis.header.apiVersion >= 1 && request.validateOnly) return [];
    return request.topics.map((topic) => ({ name: topic.name, partitions: topic.numPartitions === -1 ? autoCreatePartitions : topic.numPartitions }));
  }
  if (analysis.api.apiKey === MetadataApi.apiKey) {
    const request = analysis.request as MetadataRequest;
    if (analysis.header.apiVersion >= 4 && !request.allowAutoTopicCreation) return [];
    return (request.topics ?? []).map((topic) => ({ name: topic.name, partitions: autoCreatePartitions }));
  }
  return [];
}

/** Topic names a well-formed DeleteTopics request would delete. */
export function topicsDeletedBy(analysis: FrameAnalysis): string[] {
  if (analysis.kind === 'close' || analysis.api.apiKey !== DeleteTopicsApi.apiKey) return [];
  return [...(analysis.request as DeleteTopicsRequest).topicNames];
}

/** Fetch requests that may park for this long (ms) before answering. */
export function fetchWaitMs(analysis: FrameAnalysis): number {
  if (analysis.kind === 'close' || analysis.api.apiKey !== FetchApi.apiKey) return 0;
  return Math.max(0, (analysis.request as FetchRequest).maxWaitMs);
}
