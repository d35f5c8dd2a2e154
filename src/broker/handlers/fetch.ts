/**
 * Fetch: for every requested partition, whole record batches from the fetch offset up to the high
 * watermark, as file ranges streamed straight from the segment files. A follower's fetch
 * (ReplicaId = its broker id) reads up to what the leader has written, not just the HW, and
 * tells the leader the follower's durable log end and log start (replica-manager.ts); it parks
 * until the leader appends. CurrentLeaderEpoch (v9+) is checked against the leader's epoch (KIP-320). Limits follow KIP-74: each
 * partition gets at most min(PartitionMaxBytes, what is left of MaxBytes), and the first batch of
 * the first partition that has data comes whole even when larger. When fewer than MinBytes are
 * ready, the request waits (up to MaxWaitMs) for new flushed records, then answers with what
 * there is. Every requested partition is listed in the response (Java requires it); sessions
 * are not kept (SessionId 0).
 *
 * A consumer needs READ on each topic, a follower (ReplicaId ≥ 0) CLUSTER_ACTION on the cluster;
 * a refused topic's partitions answer TOPIC_AUTHORIZATION_FAILED and are not read (nor, for a
 * follower, recorded as fetched).
 */
import { KafkaErrorCode, KafkaProtocolError } from '../../protocol/kafka-errors.js';
import { FetchApi, type FetchRequest, type FetchResponse, type FetchResponsePartition } from '../../protocol/apis/fetch.js';
import type { ExternalPart } from '../../protocol/wire.js';
import type { LogSlice } from '../../storage/partition-log.js';
import type { BrokerContext, LocalPartition } from '../context.js';
import { localPartition } from '../context.js';
import { FetchWaiters } from '../fetch-waiters.js';
import type { FileRange } from '../response-writer.js';
import { ReplyWithCleanup, type ApiHandler, type RequestContext } from '../router.js';
import { AclOperation, CLUSTER_RESOURCE_NAME, ResourceType } from '../security/acl.js';

/**
 * The record set of a partition answered with an error: empty, never null. The field is nullable
 * from v4, but Kafka always sends an empty set, and librdkafka rejects a MessageSetSize of −1
 * ("invalid MessageSetSize -1", a protocol parse failure of the whole response): a kcat or
 * confluent-kafka consumer whose committed offset fell off retention never heard
 * OFFSET_OUT_OF_RANGE, so it never reset and read nothing at all (chaos suite `consumers`,
 * scenario off-retention).
 */
const NO_RECORDS = Buffer.alloc(0);

export function fetchHandler(context: BrokerContext): ApiHandler<FetchRequest, FetchResponse> {
  const abandonListeners = new Map<number, Set<() => void>>();
  return {
    api: FetchApi,
    onConnectionClosed(connectionId) {
      const listeners = abandonListeners.get(connectionId);
      abandonListeners.delete(connectionId);
      for (const listener of listeners ?? []) listener();
    },
    async handle(request, _version, requestContext) {
      const follower = request.replicaId >= 0;
      const waiters = follower ? context.replicaWaiters : context.waiters;
      const allowed = readableTopics(context, request, requestContext);
      let attempt = await readAll(context, request, allowed);
      const wanted = Math.max(request.minBytes, 1);
      const keys = request.topics.flatMap((topic) => topic.partitions.map((p) => FetchWaiters.key(topic.topic, p.partition)));
      // A fetch naming no partition has nothing to wait for and is answered at once, as Kafka
      // does: the Java consumer's close sends one (its fetch-session close, epoch −1) and waits
      // for the answer, so parking it for MaxWaitMs slowed every consumer's close by that much.
      if (attempt.bytes < wanted && request.maxWaitMs > 0 && !attempt.hasError && keys.length > 0) {
        attempt.release();
        const deadline = Date.now() + request.maxWaitMs;
        let gone = false;
        const abandon = {
          onAbandon: (listener: () => void) => {
            let set = abandonListeners.get(requestContext.connectionId);
            if (set === undefined) {
              set = new Set();
              abandonListeners.set(requestContext.connectionId, set);
            }
            set.add(() => {
              gone = true;
              listener();
            });
          },
        };
        // Wake on every advance until enough bytes are ready or time is up.
        for (;;) {
          const woken = await waiters.wait(keys, deadline - Date.now(), abandon);
          attempt = await readAll(context, request, allowed);
          if (gone || !woken || attempt.bytes >= wanted || attempt.hasError || Date.now() >= deadline) break;
          attempt.release();
        }
      }
      const done = attempt;
      return new ReplyWithCleanup(done.response, () => done.release());
    },
  };
}

/** Which topics the fetch may read: READ on the topic, or for a follower CLUSTER_ACTION on the cluster. */
function readableTopics(context: BrokerContext, request: FetchRequest, requestContext: RequestContext): (topic: string) => boolean {
  const { authorizer } = context;
  const { identity } = requestContext;
  if (request.replicaId >= 0) {
    const replicating = authorizer.authorize(identity, AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER, CLUSTER_RESOURCE_NAME);
    return () => replicating;
  }
  const decided = new Map<string, boolean>();
  return (topic) => {
    let allowed = decided.get(topic);
    if (allowed === undefined) {
      allowed = authorizer.authorize(identity, AclOperation.READ, ResourceType.TOPIC, topic);
      decided.set(topic, allowed);
    }
    return allowed;
  };
}

interface Attempt {
  readonly response: FetchResponse;
  readonly bytes: number;
  readonly hasError: boolean;
  release(): void;
}

/** A follower's fetch of a partition this broker leads: validated and recorded by the replica manager. */
function followerPartition(context: BrokerContext, topic: string, partition: number, followerId: number, fetchOffset: number, logStartOffset: number, currentLeaderEpoch: number): LocalPartition {
  const lookup = context.replicas.followerFetch(topic, partition, followerId, fetchOffset, logStartOffset, currentLeaderEpoch);
  if (lookup.replica === undefined) return { log: undefined, replica: undefined, errorCode: lookup.errorCode, errorMessage: lookup.errorMessage };
  return { log: lookup.replica.log, replica: lookup.replica, errorCode: 0 };
}

async function readAll(context: BrokerContext, request: FetchRequest, allowed: (topic: string) => boolean): Promise<Attempt> {
  const follower = request.replicaId >= 0;
  const slices: LogSlice[] = [];
  let remaining = request.maxBytes;
  let bytes = 0;
  let hasError = false;
  let firstData = true;
  let refused = 0;
  let readable = 0;
  const responses = [];
  for (const topic of request.topics) {
    const partitions: FetchResponsePartition[] = [];
    // Counted once per topic, not per partition: a label lookup each time costs more than the sum.
    let topicBytes = 0;
    for (const wanted of topic.partitions) {
      const base = { partitionIndex: wanted.partition, abortedTransactions: null, preferredReadReplica: -1 };
      if (!allowed(topic.topic)) {
        // Not an error that ends a long poll: the allowed partitions still wait for data.
        partitions.push({ ...base, errorCode: KafkaErrorCode.TOPIC_AUTHORIZATION_FAILED, highWatermark: -1n, lastStableOffset: -1n, logStartOffset: -1n, records: NO_RECORDS });
        refused += 1;
        continue;
      }
      readable += 1;
      const local = follower
        ? followerPartition(context, topic.topic, wanted.partition, request.replicaId, Number(wanted.fetchOffset), Number(wanted.logStartOffset), wanted.currentLeaderEpoch)
        : localPartition(context, topic.topic, wanted.partition, wanted.currentLeaderEpoch);
      if (local.log === undefined) {
        hasError = true;
        partitions.push({ ...base, errorCode: local.errorCode, highWatermark: -1n, lastStableOffset: -1n, logStartOffset: -1n, records: NO_RECORDS });
        continue;
      }
      const log = local.log;
      const limit = Math.min(wanted.partitionMaxBytes, Math.max(remaining, 0));
      try {
        // With nothing returned yet, the first batch may exceed the limits (KIP-74).
        const result = await log.read(Number(wanted.fetchOffset), firstData ? Math.max(limit, 1) : limit, { upTo: follower ? 'written' : 'highWatermark' });
        let records: Buffer | ExternalPart | null = Buffer.alloc(0);
        const slice = result.slice;
        if (slice !== undefined && (firstData || slice.size <= limit)) {
          slices.push(slice);
          const range: FileRange = { fd: slice.fd, position: slice.position, length: slice.size, cached: slice.cached };
          records = { kind: 'external', length: slice.size, source: range };
          bytes += slice.size;
          remaining -= slice.size;
          firstData = false;
          topicBytes += slice.size;
        } else {
          slice?.release();
        }
        const highWatermark = BigInt(result.highWatermark);
        partitions.push({ ...base, errorCode: 0, highWatermark, lastStableOffset: highWatermark, logStartOffset: BigInt(result.logStartOffset), records });
      } catch (error) {
        hasError = true;
        const errorCode = error instanceof KafkaProtocolError ? error.kafkaCode : KafkaErrorCode.UNKNOWN_SERVER_ERROR;
        if (!(error instanceof KafkaProtocolError)) context.logger.error({ err: error, topic: topic.topic, partition: wanted.partition }, 'read failed');
        partitions.push({
          ...base,
          errorCode,
          highWatermark: BigInt(log.highWatermark),
          lastStableOffset: BigInt(log.highWatermark),
          logStartOffset: BigInt(log.logStartOffset),
          records: NO_RECORDS,
        });
      }
    }
    if (topicBytes > 0) context.metrics.bytesOut.inc({ topic: topic.topic }, topicBytes);
    responses.push({ topic: topic.topic, partitions });
  }
  let released = false;
  return {
    response: { throttleTimeMs: 0, errorCode: 0, sessionId: 0, responses },
    bytes,
    // With every partition refused there is nothing to wait for: answer at once.
    hasError: hasError || (refused > 0 && readable === 0),
    release: () => {
      if (released) return;
      released = true;
      for (const slice of slices) slice.release();
    },
  };
}
