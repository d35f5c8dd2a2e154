/**
 * The consumer protocol's embedded formats: what a client of ProtocolType "consumer" puts in
 * JoinGroup's protocol Metadata (a Subscription) and SyncGroup's Assignment (an Assignment).
 * Each is a Version INT16 followed by that version's fields (non-flexible, no tags):
 *
 *   Subscription := Version INT16
 *                   Topics ARRAY of STRING
 *                   UserData NULLABLE_BYTES                        (assignor-specific, default null)
 *                   OwnedPartitions ARRAY of {                     (v1+)
 *                     Topic STRING
 *                     Partitions ARRAY of INT32
 *                   }
 *                   GenerationId INT32                             (v2+, default −1)
 *                   RackId NULLABLE_STRING                         (v3+, default null)
 *
 *   Assignment   := Version INT16
 *                   AssignedPartitions ARRAY of {
 *                     Topic STRING
 *                     Partitions ARRAY of INT32
 *                   }
 *                   UserData NULLABLE_BYTES                        (default null)
 *
 * Assignment v1–3 has the same fields as v0 (its version follows the Subscription's). Kafka
 * promises new versions only append fields, so a reader decodes a newer version as the newest it
 * knows (3) and ignores what follows; a negative Version is refused, as Kafka refuses it.
 *
 * THE BROKER NEVER USES THIS: group members' metadata and assignments are opaque bytes that it
 * stores and hands back untouched, whatever the protocol type or assignor. This is for admin tools
 * (which partitions each member of a described group has) and for tests.
 */
import { array, decodeStruct, encodeStruct, field, type Field } from './schema.js';
import { MalformedMessageError, WireReader, WireWriter } from './wire.js';

/** JoinGroup's ProtocolType for Kafka consumers. */
export const CONSUMER_PROTOCOL_TYPE = 'consumer';

/** The newest Subscription and Assignment version known (recent Java consumers send it). */
export const CONSUMER_PROTOCOL_VERSION = 3;

export interface ConsumerProtocolTopicPartitions {
  readonly topic: string;
  readonly partitions: readonly number[];
}

export interface ConsumerProtocolSubscription {
  /** As written in the bytes; may be above CONSUMER_PROTOCOL_VERSION (decoded as it). */
  readonly version: number;
  readonly topics: readonly string[];
  readonly userData: Buffer | null;
  /** v1+; [] before. */
  readonly ownedPartitions: readonly ConsumerProtocolTopicPartitions[];
  /** v2+; −1 before. */
  readonly generationId: number;
  /** v3+; null before. */
  readonly rackId: string | null;
}

export interface ConsumerProtocolAssignment {
  /** As written in the bytes; may be above CONSUMER_PROTOCOL_VERSION (decoded as it). */
  readonly version: number;
  readonly assignedPartitions: readonly ConsumerProtocolTopicPartitions[];
  readonly userData: Buffer | null;
}

/** What encodeConsumerSubscription needs: the topics; the rest defaults as Kafka's do. */
export interface ConsumerProtocolSubscriptionInput {
  /** Default CONSUMER_PROTOCOL_VERSION. */
  readonly version?: number;
  readonly topics: readonly string[];
  readonly userData?: Buffer | null;
  readonly ownedPartitions?: readonly ConsumerProtocolTopicPartitions[];
  readonly generationId?: number;
  readonly rackId?: string | null;
}

/** What encodeConsumerAssignment needs: the partitions; the rest defaults as Kafka's do. */
export interface ConsumerProtocolAssignmentInput {
  /** Default CONSUMER_PROTOCOL_VERSION. */
  readonly version?: number;
  readonly assignedPartitions: readonly ConsumerProtocolTopicPartitions[];
  readonly userData?: Buffer | null;
}

const SUBSCRIPTION: readonly Field[] = [
  field('Topics', array('string'), '0+'),
  field('UserData', 'bytes', '0+', { nullable: '0+', default: null }),
  field('OwnedPartitions', array([field('Topic', 'string', '1+'), field('Partitions', array('int32'), '1+')]), '1+'),
  field('GenerationId', 'int32', '2+', { default: -1 }),
  field('RackId', 'string', '3+', { nullable: '3+', default: null }),
];

const ASSIGNMENT: readonly Field[] = [
  field('AssignedPartitions', array([field('Topic', 'string', '0+'), field('Partitions', array('int32'), '0+')]), '0+'),
  field('UserData', 'bytes', '0+', { nullable: '0+', default: null }),
];

function readVersion(reader: WireReader, what: string): number {
  const version = reader.int16(`${what} Version`);
  if (version < 0) throw new MalformedMessageError(`${what} has unsupported version ${version}`);
  return version;
}

function encodeVersioned(fields: readonly Field[], version: number | undefined, value: object, what: string): Buffer {
  const v = version ?? CONSUMER_PROTOCOL_VERSION;
  if (!Number.isInteger(v) || v < 0 || v > CONSUMER_PROTOCOL_VERSION) throw new RangeError(`${what} version ${v} is not one of 0–${CONSUMER_PROTOCOL_VERSION}`);
  const writer = new WireWriter();
  writer.int16(v);
  encodeStruct(fields, v, value as Record<string, unknown>, writer);
  return writer.toBuffer();
}

/**
 * A Subscription from JoinGroup protocol metadata. Trailing bytes (fields of a newer version) are
 * ignored; a truncated or negative-version one is a MalformedMessageError. UserData is a view into
 * `bytes`, not a copy.
 */
export function decodeConsumerSubscription(bytes: Buffer): ConsumerProtocolSubscription {
  const reader = new WireReader(bytes);
  const version = readVersion(reader, 'Subscription');
  const fields = decodeStruct(SUBSCRIPTION, Math.min(version, CONSUMER_PROTOCOL_VERSION), reader);
  return { version, ...(fields as Omit<ConsumerProtocolSubscription, 'version'>) };
}

/** Subscription bytes of `version` (default 3); fields the version lacks are not written. */
export function encodeConsumerSubscription(subscription: ConsumerProtocolSubscriptionInput): Buffer {
  return encodeVersioned(SUBSCRIPTION, subscription.version, subscription, 'Subscription');
}

/**
 * An Assignment from a SyncGroup response or a described member. Trailing bytes are ignored; a
 * truncated or negative-version one is a MalformedMessageError. UserData is a view into `bytes`.
 * A member of a group that is not Stable is described with empty MemberAssignment bytes, which
 * are no Assignment at all (a truncation): check the length first.
 */
export function decodeConsumerAssignment(bytes: Buffer): ConsumerProtocolAssignment {
  const reader = new WireReader(bytes);
  const version = readVersion(reader, 'Assignment');
  const fields = decodeStruct(ASSIGNMENT, Math.min(version, CONSUMER_PROTOCOL_VERSION), reader);
  return { version, ...(fields as Omit<ConsumerProtocolAssignment, 'version'>) };
}

/** Assignment bytes of `version` (default 3). */
export function encodeConsumerAssignment(assignment: ConsumerProtocolAssignmentInput): Buffer {
  return encodeVersioned(ASSIGNMENT, assignment.version, assignment, 'Assignment');
}
