/**
 * The ZooKeeper layout of ARCHITECTURE.md ("ZooKeeper layout"), as functions, so no other code
 * spells a path by hand. All paths are relative to the cluster's chroot.
 *
 *   /brokers/ids/<id>                                 ephemeral   broker registration
 *   /brokers/topics/<topic>                           persistent  partition assignment (replica lists)
 *   /brokers/topics/<topic>/partitions/<p>/state      persistent  leader, leader epoch, ISR (partition-state.ts)
 *   /config/topics/<topic>                            persistent  per-topic overrides
 *   /config/users/<user, URL-encoded>                 persistent  SCRAM credentials (user-credentials.ts)
 *   /consumers/<group>/ids/<consumerId>               ephemeral   consumer registration
 *   /consumers/<group>/owners/<topic>/<partition>     ephemeral   owning consumer thread
 *   /consumers/<group>/offsets/<topic>/<partition>    persistent  next offset to read
 *   /consumers/<group>/kind                           persistent  which kind of group owns the id
 *   /schemas/…                                        persistent  registry state
 *   /etl/locks/<load>                                 ephemeral   the run allowed to commit
 *   /latest_producer_id_block                         persistent  last producer-id block claimed
 *   /cluster/id                                       persistent  the cluster's id (Metadata)
 *   /controller                                       ephemeral   the elected controller
 *   /controller_epoch                                 persistent  the controller epoch (fences stale controllers)
 *
 * Every name placed into a path is checked: non-empty, no `/`, not `.` or `..`, no control
 * characters. A bad name throws INVALID_PATH rather than addressing some other node.
 */
import { coordinationError, FORBIDDEN_PATH_CHARACTERS } from './store.js';

/** Checks one name that becomes a single path segment, and returns it. */
export function pathSegment(kind: string, value: string): string {
  const fail = (reason: string): never => {
    throw coordinationError('INVALID_PATH', {
      message: `${kind} ${JSON.stringify(value)} cannot be a path segment: ${reason}`,
      details: { kind, value },
    });
  };
  if (typeof value !== 'string' || value.length === 0) fail('empty');
  if (value.includes('/')) fail("contains '/'");
  if (value === '.' || value === '..') fail('relative name');
  if (FORBIDDEN_PATH_CHARACTERS.test(value)) fail('control or reserved character');
  return value;
}

/** Checks a number that becomes a path segment (broker id, partition): a non-negative integer. */
function numberSegment(kind: string, value: number): string {
  if (!Number.isSafeInteger(value) || value < 0) {
    throw coordinationError('INVALID_PATH', {
      message: `${kind} ${String(value)} cannot be a path segment: not a non-negative integer`,
      details: { kind, value },
    });
  }
  return String(value);
}

export function brokersPath(): string {
  return '/brokers';
}

export function brokerIdsPath(): string {
  return '/brokers/ids';
}

export function brokerPath(id: number): string {
  return `${brokerIdsPath()}/${numberSegment('broker id', id)}`;
}

export function topicsPath(): string {
  return '/brokers/topics';
}

export function topicPath(topic: string): string {
  return `${topicsPath()}/${pathSegment('topic', topic)}`;
}

/** Parent of the topic's per-partition nodes (Kafka's layout; only `state` lives below each). */
export function topicPartitionsPath(topic: string): string {
  return `${topicPath(topic)}/partitions`;
}

export function partitionPath(topic: string, partition: number): string {
  return `${topicPartitionsPath(topic)}/${numberSegment('partition', partition)}`;
}

/** The partition's leader/ISR state; its version is the compare-and-set token of every change. */
export function partitionStatePath(topic: string, partition: number): string {
  return `${partitionPath(topic, partition)}/state`;
}

export function topicConfigsPath(): string {
  return '/config/topics';
}

export function topicConfigPath(topic: string): string {
  return `${topicConfigsPath()}/${pathSegment('topic', topic)}`;
}

export function userConfigsPath(): string {
  return '/config/users';
}

/**
 * A user's node. The name is URL-encoded as Kafka's Sanitizer does (all but `A–Z a–z 0–9 . _ -`
 * as %XX of its UTF-8 bytes), so `CN=client,O=acme` or `a/b` address one node and Kafka's tools
 * find the same node for the same user.
 */
export function userConfigPath(user: string): string {
  return `${userConfigsPath()}/${pathSegment('user', sanitizeUserName(user))}`;
}

export function sanitizeUserName(user: string): string {
  return Array.from(Buffer.from(user, 'utf8'), (byte) => (/[A-Za-z0-9._-]/.test(String.fromCharCode(byte)) ? String.fromCharCode(byte) : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`)).join('');
}

/** The user a child of /config/users names; undefined for a name that is not valid %-encoding. */
export function userNameOfNode(node: string): string | undefined {
  try {
    return decodeURIComponent(node.replaceAll('+', ' '));
  } catch {
    return undefined;
  }
}

export function consumersPath(): string {
  return '/consumers';
}

export function consumerGroupPath(group: string): string {
  return `${consumersPath()}/${pathSegment('consumer group', group)}`;
}

export function consumerIdsPath(group: string): string {
  return `${consumerGroupPath(group)}/ids`;
}

export function consumerPath(group: string, consumerId: string): string {
  return `${consumerIdsPath(group)}/${pathSegment('consumer id', consumerId)}`;
}

/** `/consumers/<group>/owners`, or `/consumers/<group>/owners/<topic>` with a topic. */
export function ownersPath(group: string, topic?: string): string {
  const base = `${consumerGroupPath(group)}/owners`;
  return topic === undefined ? base : `${base}/${pathSegment('topic', topic)}`;
}

export function ownerPath(group: string, topic: string, partition: number): string {
  return `${ownersPath(group, topic)}/${numberSegment('partition', partition)}`;
}

/** `/consumers/<group>/offsets`, or `/consumers/<group>/offsets/<topic>` with a topic. */
export function offsetsPath(group: string, topic?: string): string {
  const base = `${consumerGroupPath(group)}/offsets`;
  return topic === undefined ? base : `${base}/${pathSegment('topic', topic)}`;
}

export function offsetPath(group: string, topic: string, partition: number): string {
  return `${offsetsPath(group, topic)}/${numberSegment('partition', partition)}`;
}

/** Which kind of group the id belongs to: the paper's ZooKeeper group or a broker-coordinated one. */
export function groupKindPath(group: string): string {
  return `${consumerGroupPath(group)}/kind`;
}

export function schemasPath(): string {
  return '/schemas';
}

export function etlLocksPath(): string {
  return '/etl/locks';
}

export function etlLockPath(load: string): string {
  return `${etlLocksPath()}/${pathSegment('load', load)}`;
}

/** Kafka's path for the last block of producer ids claimed (coordination/producer-ids.ts). */
export function latestProducerIdBlockPath(): string {
  return '/latest_producer_id_block';
}

/** Kafka's path for the cluster id every broker reports (coordination/cluster-id.ts). */
export function clusterIdPath(): string {
  return '/cluster/id';
}

/** Kafka's ephemeral node of the elected controller: the broker that creates it first wins. */
export function controllerPath(): string {
  return '/controller';
}

/** Kafka's controller epoch, +1 at each election; checked in every controller write (stale controllers fail). */
export function controllerEpochPath(): string {
  return '/controller_epoch';
}
