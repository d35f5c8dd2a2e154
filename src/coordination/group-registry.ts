/**
 * The paper's offset registry, shared by both kinds of consumer group: the paper's ZooKeeper
 * groups (client/group/zookeeper-consumer.ts) and the groups the brokers coordinate for standard
 * Kafka clients (broker/group/). A group id belongs to one kind or the other, recorded in
 * `/consumers/<group>/kind`; whoever creates that node first owns the id, and the other kind is
 * refused rather than mixed.
 *
 *   /consumers/<group>/kind                         {"kind":"zookeeper"}
 *                                                   {"kind":"broker","protocolType":"consumer","emptySince":<ms>|null}
 *   /consumers/<group>/offsets/<topic>/<partition>  the next offset to read:
 *                                                   decimal text (paper groups), or for broker groups
 *                                                   {"offset":"<int64>","leaderEpoch":<int32>,"metadata":"…","commitTimestamp":<ms>,"expireTimestamp"?:<ms>}
 *
 * A group created before the kind node existed is a ZooKeeper group if `/consumers/<group>/ids`
 * exists (every paper consumer creates it). Both value forms are read everywhere, so
 * `tributary groups` and Kafka's OffsetFetch see the offsets of either kind.
 */
import { TributaryError } from '../common/errors.js';
import { consumerGroupPath, consumerIdsPath, consumersPath, groupKindPath, offsetPath, offsetsPath } from './paths.js';
import { hasCode, type CoordinationStore, type TransactionOp } from './store.js';

export type GroupKind = 'zookeeper' | 'broker';

export interface GroupRecord {
  readonly kind: GroupKind;
  /** Broker groups: the members' protocol type ("consumer"), or "" for a group that only commits. */
  readonly protocolType: string;
  /** Broker groups: when the group last became empty (offset retention counts from it); null while it has members. */
  readonly emptySince: number | null;
}

export interface CommittedOffset {
  readonly offset: bigint;
  /** The leader epoch the client committed with, or -1. */
  readonly leaderEpoch: number;
  /** The client's metadata string, exactly as committed ("" when it sent none). */
  readonly metadata: string;
  /** When the commit was stored; undefined for the paper's decimal values, which carry no time. */
  readonly commitTimestamp: number | undefined;
  /** OffsetCommit v2–4 may ask for a retention of its own; then the offset expires at this time. */
  readonly expireTimestamp?: number;
}

export interface OffsetEntry {
  readonly topic: string;
  readonly partition: number;
  readonly value: CommittedOffset;
}

/** Operations in one ZooKeeper multi: keeps a request well under jute.maxbuffer (1 MiB). */
const OPS_PER_TRANSACTION = 500;
/** Tries of a commit whose view of which offset nodes exist was stale. */
const WRITE_ATTEMPTS = 4;

export function encodeGroupRecord(record: GroupRecord): Buffer {
  return Buffer.from(JSON.stringify(record.kind === 'zookeeper' ? { kind: 'zookeeper' } : record));
}

export function decodeGroupRecord(data: Buffer, group: string): GroupRecord {
  let parsed: unknown;
  try {
    parsed = JSON.parse(data.toString('utf8'));
  } catch (error) {
    throw corruptNode(groupKindPath(group), error);
  }
  const value = parsed as Partial<Record<keyof GroupRecord, unknown>>;
  if (value.kind === 'zookeeper') return { kind: 'zookeeper', protocolType: '', emptySince: null };
  if (value.kind === 'broker') {
    return {
      kind: 'broker',
      protocolType: typeof value.protocolType === 'string' ? value.protocolType : '',
      emptySince: typeof value.emptySince === 'number' ? value.emptySince : null,
    };
  }
  throw corruptNode(groupKindPath(group), undefined);
}

export function encodeCommittedOffset(value: CommittedOffset): Buffer {
  return Buffer.from(
    JSON.stringify({
      offset: value.offset.toString(),
      leaderEpoch: value.leaderEpoch,
      metadata: value.metadata,
      commitTimestamp: value.commitTimestamp,
      ...(value.expireTimestamp === undefined ? {} : { expireTimestamp: value.expireTimestamp }),
    }),
  );
}

/** Reads either form; undefined for a value that is neither (it is reported as "no offset"). */
export function decodeCommittedOffset(data: Buffer): CommittedOffset | undefined {
  const text = data.toString('utf8').trim();
  if (/^-?\d+$/.test(text)) return { offset: BigInt(text), leaderEpoch: -1, metadata: '', commitTimestamp: undefined };
  if (!text.startsWith('{')) return undefined;
  try {
    const parsed = JSON.parse(text) as Record<string, unknown>;
    if (typeof parsed.offset !== 'string' || !/^-?\d+$/.test(parsed.offset)) return undefined;
    return {
      offset: BigInt(parsed.offset),
      leaderEpoch: typeof parsed.leaderEpoch === 'number' ? parsed.leaderEpoch : -1,
      metadata: typeof parsed.metadata === 'string' ? parsed.metadata : '',
      commitTimestamp: typeof parsed.commitTimestamp === 'number' ? parsed.commitTimestamp : undefined,
      ...(typeof parsed.expireTimestamp === 'number' ? { expireTimestamp: parsed.expireTimestamp } : {}),
    };
  } catch {
    return undefined;
  }
}

/** The group's kind record with its node version; a legacy paper group reads as kind zookeeper (version -1). */
export async function readGroupRecord(store: CoordinationStore, group: string): Promise<{ record: GroupRecord; version: number } | undefined> {
  const node = await store.get(groupKindPath(group));
  if (node !== undefined) return { record: decodeGroupRecord(node.data, group), version: node.version };
  if (await store.exists(consumerIdsPath(group))) return { record: { kind: 'zookeeper', protocolType: '', emptySince: null }, version: -1 };
  return undefined;
}

/**
 * Claims the id for `record.kind` unless another kind has it. Returns the record that owns the
 * id now (ours, or the one found), so the caller compares kinds.
 */
export async function claimGroup(store: CoordinationStore, group: string, record: GroupRecord): Promise<{ record: GroupRecord; version: number }> {
  for (let attempt = 1; ; attempt += 1) {
    const found = await readGroupRecord(store, group);
    if (found !== undefined) return found;
    try {
      await store.ensurePath(consumerGroupPath(group));
      await store.create(groupKindPath(group), encodeGroupRecord(record), 'persistent');
      return { record, version: 0 };
    } catch (error) {
      // NODE_EXISTS: someone else claimed it first; read what they wrote (unless it keeps vanishing).
      if (!hasCode(error, 'NODE_EXISTS') || attempt >= WRITE_ATTEMPTS) throw error;
    }
  }
}

/** Rewrites a broker group's record (emptySince, protocol type); with a version, only from that version. */
export async function writeGroupRecord(store: CoordinationStore, group: string, record: GroupRecord, expectedVersion?: number): Promise<number> {
  return store.set(groupKindPath(group), encodeGroupRecord(record), expectedVersion);
}

/** The error a ZooKeeper consumer or a broker gets for an id owned by the other kind of group. */
export function groupKindConflict(group: string, owner: GroupKind): TributaryError {
  const message =
    owner === 'broker'
      ? `consumer group ${group} is coordinated by the brokers (a Kafka client's group: kafkajs, librdkafka, Java); a ZooKeeper (paper-style) consumer cannot join it. Use another group id, or delete the group once it is empty (kafka-consumer-groups.sh --delete, or tributary groups delete)`
      : `consumer group ${group} is a ZooKeeper (paper-style) group; a broker-coordinated consumer (kafkajs, librdkafka, Java) cannot join it. Use another group id, or delete the group once it has no live member (tributary groups delete)`;
  return new TributaryError({ code: 'GROUP_KIND_CONFLICT', message, details: { group, owner } });
}

/** Every committed offset of the group, or of the given topics only. */
export async function readOffsets(store: CoordinationStore, group: string, topics?: readonly string[]): Promise<OffsetEntry[]> {
  const names = topics ?? (await store.children(offsetsPath(group))) ?? [];
  const entries: OffsetEntry[] = [];
  for (const topic of names) {
    const partitions = (await store.children(offsetsPath(group, topic))) ?? [];
    const reads = partitions
      .filter((name) => /^\d+$/.test(name))
      .map(async (name) => {
        const partition = Number(name);
        const node = await store.get(offsetPath(group, topic, partition));
        const value = node === undefined ? undefined : decodeCommittedOffset(node.data);
        return value === undefined ? undefined : { topic, partition, value };
      });
    for (const entry of await Promise.all(reads)) if (entry !== undefined) entries.push(entry);
  }
  return entries.sort((a, b) => (a.topic === b.topic ? a.partition - b.partition : a.topic < b.topic ? -1 : 1));
}

/**
 * Stores offsets durably, in as few transactions as the size limit allows (each all or nothing).
 * `existing` caches which offset nodes exist (`topic/partition`), so a steady committer costs one
 * round trip; a stale cache (retention or a delete removed a node) is repaired by reading.
 */
export async function writeOffsets(store: CoordinationStore, group: string, entries: readonly OffsetEntry[], existing: Set<string>): Promise<void> {
  for (let start = 0; start < entries.length; start += OPS_PER_TRANSACTION) {
    await writeChunk(store, group, entries.slice(start, start + OPS_PER_TRANSACTION), existing);
  }
}

async function writeChunk(store: CoordinationStore, group: string, entries: readonly OffsetEntry[], existing: Set<string>): Promise<void> {
  for (let attempt = 1; ; attempt += 1) {
    const ops: TransactionOp[] = entries.map(({ topic, partition, value }) => {
      const path = offsetPath(group, topic, partition);
      const data = encodeCommittedOffset(value);
      return existing.has(`${topic}/${partition}`) ? { op: 'set', path, data } : { op: 'create', path, data, mode: 'persistent' };
    });
    try {
      await store.transaction(ops);
      for (const { topic, partition } of entries) existing.add(`${topic}/${partition}`);
      return;
    } catch (error) {
      if (attempt >= WRITE_ATTEMPTS || !(hasCode(error, 'NODE_EXISTS') || hasCode(error, 'NO_NODE'))) throw error;
      // The cache was wrong about some node, or a topic's folder is missing: look, then retry.
      for (const topic of new Set(entries.map((entry) => entry.topic))) await store.ensurePath(offsetsPath(group, topic));
      await Promise.all(
        entries.map(async ({ topic, partition }) => {
          const key = `${topic}/${partition}`;
          if (await store.exists(offsetPath(group, topic, partition))) existing.add(key);
          else existing.delete(key);
        }),
      );
    }
  }
}

/** Deletes the given offsets (retention); a node already gone is not an error. */
export async function deleteOffsets(store: CoordinationStore, group: string, entries: readonly { topic: string; partition: number }[]): Promise<void> {
  for (const { topic, partition } of entries) {
    try {
      await store.delete(offsetPath(group, topic, partition));
    } catch (error) {
      if (!hasCode(error, 'NO_NODE')) throw error;
    }
  }
}

/** Removes the group's every node: its kind, offsets and (empty) member folders. */
export async function deleteGroup(store: CoordinationStore, group: string): Promise<void> {
  await store.deleteRecursive(consumerGroupPath(group));
}

/** Every group id in the registry, of either kind. */
export async function listGroupIds(store: CoordinationStore): Promise<string[]> {
  return ((await store.children(consumersPath())) ?? []).sort();
}

/** The live members of a ZooKeeper group (ephemeral nodes under /consumers/<group>/ids). */
export async function liveZooKeeperMembers(store: CoordinationStore, group: string): Promise<string[]> {
  return (await store.children(consumerIdsPath(group))) ?? [];
}

function corruptNode(path: string, cause: unknown): TributaryError {
  return new TributaryError({
    code: 'GROUP_RECORD_CORRUPT',
    message: `${path} does not hold a group record; fix or delete the node (it should be {"kind":"zookeeper"} or {"kind":"broker",…})`,
    details: { path },
    ...(cause === undefined ? {} : { cause }),
  });
}
