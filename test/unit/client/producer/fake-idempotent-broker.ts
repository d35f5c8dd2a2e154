/**
 * A scripted single broker over real TCP (the project's codec) that keeps Kafka's idempotent
 * produce rules (kafka-clients.md §2.2) for the producer's unit tests: per partition and producer
 * id the epoch, the last sequence and the last 5 batches; a repeat of one of those is answered
 * with success and its original offset, a gap with OUT_OF_ORDER_SEQUENCE_NUMBER, an older epoch
 * with INVALID_PRODUCER_EPOCH, a newer one must start at sequence 0.
 *
 * `fault` decides, per Produce attempt of a partition, whether to store and then drop the
 * connection (the answer is lost), drop before storing, answer with an error, or behave.
 */
import { createServer, type Server, type Socket } from 'node:net';
import { ApiVersionsApi, type ApiVersionsResponse } from '../../../../src/protocol/apis/api-versions.js';
import { InitProducerIdApi, type InitProducerIdResponse } from '../../../../src/protocol/apis/init-producer-id.js';
import { MetadataApi, type MetadataRequest, type MetadataResponse } from '../../../../src/protocol/apis/metadata.js';
import { ProduceApi, type ProducePartitionResponse, type ProduceRequest, type ProduceResponse } from '../../../../src/protocol/apis/produce.js';
import { FrameDecoder } from '../../../../src/protocol/framing.js';
import { decodeRequestHeader, encodeResponseHeader } from '../../../../src/protocol/headers.js';
import { KafkaErrorCode } from '../../../../src/protocol/kafka-errors.js';
import { readBatchHeader, type RecordBatchHeader } from '../../../../src/protocol/record-batch.js';
import { decodeRecords } from '../../../../src/protocol/records.js';
import { decodeRequestBody, encodeResponseBody, type ApiSchema } from '../../../../src/protocol/schema.js';
import { WireReader, WireWriter } from '../../../../src/protocol/wire.js';

export type Fault = 'none' | 'store-then-drop' | 'drop' | { readonly errorCode: number };

interface CachedBatch {
  readonly firstSeq: number;
  readonly lastSeq: number;
  readonly firstOffset: bigint;
}

interface ProducerEntry {
  epoch: number;
  lastSeq: number;
  readonly batches: CachedBatch[];
}

export interface SeenBatch {
  readonly partition: number;
  readonly producerId: bigint;
  readonly epoch: number;
  readonly baseSequence: number;
  readonly count: number;
  readonly answer: string;
}

export class FakeIdempotentBroker {
  /** Values stored, per partition of topic `t`. */
  readonly stored = new Map<number, string[]>();
  /** Every batch that arrived, in arrival order, with what it was answered. */
  readonly seen: SeenBatch[] = [];
  readonly initProducerIdRequests: number[] = [];
  /** Largest number of Produce requests for one partition received and not yet answered. */
  maxInFlightPerPartition = 0;
  serveInitProducerId = true;
  nextProducerId = 1000n;
  /** The epoch InitProducerId hands out (0, as Kafka does for a fresh id; higher to test exhaustion). */
  initialEpoch = 0;
  fault: (partition: number, attempt: number, header: RecordBatchHeader) => Fault = () => 'none';
  private readonly producers = new Map<string, ProducerEntry>();
  private readonly attempts = new Map<number, number>();
  private readonly unanswered = new Map<number, number>();
  private readonly sockets = new Set<Socket>();
  private readonly server: Server;
  port = 0;

  constructor(
    private readonly partitions: number,
    private readonly answerDelayMs = 2,
  ) {
    this.server = createServer((socket) => this.serve(socket));
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    const address = this.server.address();
    this.port = typeof address === 'object' && address !== null ? address.port : 0;
    return this;
  }

  get bootstrap(): string {
    return `127.0.0.1:${this.port}`;
  }

  /**
   * The broker's idea of every producer's last sequence goes wrong (as after its state was lost
   * and rebuilt from a truncated log): every next batch is a gap, answered OUT_OF_ORDER.
   */
  desynchronize(): void {
    for (const entry of this.producers.values()) {
      entry.lastSeq += 1000;
      entry.batches.length = 0;
    }
  }

  async stop(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise((resolve) => this.server.close(resolve));
  }

  private serve(socket: Socket): void {
    this.sockets.add(socket);
    socket.on('close', () => this.sockets.delete(socket));
    socket.on('error', () => undefined);
    const decoder = new FrameDecoder(1 << 26);
    // One request at a time per connection, answered in order, as a real broker does.
    let previous: Promise<void> = Promise.resolve();
    socket.on('data', (chunk: Buffer) => {
      for (const frame of decoder.push(chunk)) {
        const reader = new WireReader(frame);
        const header = decodeRequestHeader(reader);
        const partitions = header.apiKey === ProduceApi.apiKey ? this.countInFlight(frame) : [];
        previous = previous.then(async () => {
          const response = socket.destroyed ? undefined : await this.handle(header.apiKey, header.apiVersion, reader, socket);
          for (const partition of partitions) this.unanswered.set(partition, (this.unanswered.get(partition) ?? 1) - 1);
          if (response === undefined || socket.destroyed) return;
          const writer = new WireWriter();
          writer.int32(0);
          encodeResponseHeader(writer, header.correlationId);
          encodeResponseBody(response.api, header.apiVersion, response.body, writer);
          const bytes = writer.toBuffer();
          bytes.writeInt32BE(bytes.length - 4, 0);
          socket.write(bytes);
        });
      }
    });
  }

  private countInFlight(frame: Buffer): number[] {
    const reader = new WireReader(frame);
    const header = decodeRequestHeader(reader);
    const request = decodeRequestBody(ProduceApi, header.apiVersion, reader);
    const partitions = request.topicData.flatMap((topic) => topic.partitionData.map((data) => data.index));
    for (const partition of partitions) {
      const count = (this.unanswered.get(partition) ?? 0) + 1;
      this.unanswered.set(partition, count);
      this.maxInFlightPerPartition = Math.max(this.maxInFlightPerPartition, count);
    }
    return partitions;
  }

  private async handle(apiKey: number, version: number, reader: WireReader, socket: Socket): Promise<{ api: ApiSchema<unknown, unknown>; body: unknown } | undefined> {
    if (apiKey === ApiVersionsApi.apiKey) {
      const keys = [
        { apiKey: ProduceApi.apiKey, minVersion: 3, maxVersion: 8 },
        { apiKey: MetadataApi.apiKey, minVersion: 0, maxVersion: 8 },
        { apiKey: ApiVersionsApi.apiKey, minVersion: 0, maxVersion: 2 },
        ...(this.serveInitProducerId ? [{ apiKey: InitProducerIdApi.apiKey, minVersion: 0, maxVersion: 1 }] : []),
      ];
      const body: ApiVersionsResponse = { errorCode: 0, apiKeys: keys, throttleTimeMs: 0 };
      return { api: ApiVersionsApi, body };
    }
    if (apiKey === InitProducerIdApi.apiKey) {
      decodeRequestBody(InitProducerIdApi, version, reader);
      this.initProducerIdRequests.push(version);
      const body: InitProducerIdResponse = { throttleTimeMs: 0, errorCode: 0, producerId: this.nextProducerId++, producerEpoch: this.initialEpoch };
      return { api: InitProducerIdApi, body };
    }
    if (apiKey === MetadataApi.apiKey) {
      const request = decodeRequestBody(MetadataApi, version, reader);
      return { api: MetadataApi, body: this.metadata(request) };
    }
    if (apiKey === ProduceApi.apiKey) {
      const request = decodeRequestBody(ProduceApi, version, reader);
      await new Promise((resolve) => setTimeout(resolve, this.answerDelayMs));
      const { response, drop } = this.produce(request);
      if (drop) {
        socket.destroy();
        return undefined;
      }
      return { api: ProduceApi, body: response };
    }
    throw new Error(`fake broker got api ${apiKey}`);
  }

  private metadata(request: MetadataRequest): MetadataResponse {
    const names = request.topics === null ? ['t'] : request.topics.map((topic) => topic.name);
    return {
      throttleTimeMs: 0,
      brokers: [{ nodeId: 0, host: '127.0.0.1', port: this.port, rack: null }],
      clusterId: 'fake',
      controllerId: 0,
      topics: names.map((name) => ({
        errorCode: name === 't' ? 0 : KafkaErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        name,
        isInternal: false,
        partitions:
          name === 't'
            ? Array.from({ length: this.partitions }, (_, partitionIndex) => ({
                errorCode: 0,
                partitionIndex,
                leaderId: 0,
                leaderEpoch: 0,
                replicaNodes: [0],
                isrNodes: [0],
                offlineReplicas: [],
              }))
            : [],
        topicAuthorizedOperations: -2147483648,
      })),
      clusterAuthorizedOperations: -2147483648,
    };
  }

  private produce(request: ProduceRequest): { response: ProduceResponse; drop: boolean } {
    let drop = false;
    const responses = request.topicData.map((topic) => ({
      name: topic.name,
      partitionResponses: topic.partitionData.map((data): ProducePartitionResponse => {
        const records = data.records ?? Buffer.alloc(0);
        const header = readBatchHeader(records);
        const attempt = (this.attempts.get(data.index) ?? 0) + 1;
        this.attempts.set(data.index, attempt);
        const fault = this.fault(data.index, attempt, header);
        const base = { index: data.index, logAppendTimeMs: -1n, logStartOffset: 0n, recordErrors: [], errorMessage: null };
        const see = (answer: string): void => {
          this.seen.push({ partition: data.index, producerId: header.producerId, epoch: header.producerEpoch, baseSequence: header.baseSequence, count: header.recordsCount, answer });
        };
        if (fault === 'drop') {
          drop = true;
          see('dropped');
          return { ...base, errorCode: KafkaErrorCode.REQUEST_TIMED_OUT, baseOffset: -1n };
        }
        if (typeof fault === 'object') {
          see(`error ${fault.errorCode}`);
          return { ...base, errorCode: fault.errorCode, baseOffset: -1n };
        }
        const checked = this.check(data.index, header);
        if (typeof checked === 'number') {
          see(`error ${checked}`);
          return { ...base, errorCode: checked, baseOffset: -1n };
        }
        let offset = checked.duplicateOf;
        if (offset === undefined) {
          const log = this.stored.get(data.index) ?? [];
          this.stored.set(data.index, log);
          offset = BigInt(log.length);
          for (const record of decodeRecords(records)) log.push(record.value?.toString() ?? '');
          checked.remember(offset);
          see('stored');
        } else {
          see('duplicate');
        }
        if (fault === 'store-then-drop') drop = true;
        return { ...base, errorCode: 0, baseOffset: offset };
      }),
    }));
    return { response: { responses, throttleTimeMs: 0 }, drop };
  }

  /** Kafka's checks in Kafka's order: duplicate, older epoch, newer epoch, same epoch, unknown producer. */
  private check(partition: number, header: RecordBatchHeader): number | { duplicateOf: bigint | undefined; remember: (offset: bigint) => void } {
    const accept = { duplicateOf: undefined, remember: () => undefined };
    if (header.producerId < 0n) return accept;
    const key = `${partition}/${header.producerId}`;
    const entry = this.producers.get(key);
    const firstSeq = header.baseSequence;
    const lastSeq = firstSeq + header.lastOffsetDelta;
    const remember = (offset: bigint): void => {
      const current = this.producers.get(key);
      const next: ProducerEntry = current !== undefined && current.epoch === header.producerEpoch ? current : { epoch: header.producerEpoch, lastSeq: -1, batches: [] };
      next.lastSeq = lastSeq;
      next.batches.push({ firstSeq, lastSeq, firstOffset: offset });
      if (next.batches.length > 5) next.batches.shift();
      this.producers.set(key, next);
    };
    if (entry === undefined) return { duplicateOf: undefined, remember };
    if (entry.epoch === header.producerEpoch) {
      const duplicate = entry.batches.find((batch) => batch.firstSeq === firstSeq && batch.lastSeq === lastSeq);
      if (duplicate !== undefined) return { duplicateOf: duplicate.firstOffset, remember };
    }
    if (header.producerEpoch < entry.epoch) return KafkaErrorCode.INVALID_PRODUCER_EPOCH;
    if (header.producerEpoch > entry.epoch) return firstSeq === 0 ? { duplicateOf: undefined, remember } : KafkaErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER;
    return firstSeq === entry.lastSeq + 1 ? { duplicateOf: undefined, remember } : KafkaErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER;
  }
}
