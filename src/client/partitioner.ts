/**
 * Which partition a record goes to.
 *
 * A keyed record goes to `toPositive(murmur2(key)) % numPartitions`, bit for bit what the Java
 * client's default partitioner (`BuiltInPartitioner.partitionForKey`, `Utils.murmur2`) and
 * librdkafka's `murmur2_random` partitioner compute, so a key lands on the same partition
 * whichever of these clients sends it. The count is that of all partitions, available or not, as
 * in Java: a key must not move because a broker is down.
 *
 * A record without a key (null or absent; an empty key is a key) is spread over the partitions:
 * 'round-robin' (a per-topic counter, starting at a random place as Java's old default did) or
 * 'random'. Both prefer partitions that have a leader when the caller says which ones do.
 */
import { TributaryError } from '../common/errors.js';

/**
 * Kafka's `Utils.murmur2`: MurmurHash2, 32-bit, seed 0x9747b28c, read little-endian four bytes at
 * a time. Java's `int` arithmetic wraps at 32 bits: `Math.imul` multiplies the same way, `| 0`
 * keeps every intermediate a signed 32-bit value, `>>>` is Java's unsigned shift. Returns a
 * signed 32-bit integer, as Java does.
 */
export function murmur2(data: Uint8Array): number {
  const length = data.length;
  const seed = 0x9747b28c | 0;
  const m = 0x5bd1e995;
  const r = 24;

  let h = seed ^ length;
  const length4 = length >>> 2;
  for (let i = 0; i < length4; i += 1) {
    const i4 = i * 4;
    let k = (data[i4] ?? 0) | ((data[i4 + 1] ?? 0) << 8) | ((data[i4 + 2] ?? 0) << 16) | ((data[i4 + 3] ?? 0) << 24);
    k = Math.imul(k, m);
    k ^= k >>> r;
    k = Math.imul(k, m);
    h = Math.imul(h, m);
    h ^= k;
  }

  // Java's `switch (length % 4)` falls through from case 3 to 2 to 1; the last case multiplies.
  const tail = length & ~3;
  const remaining = length & 3;
  if (remaining >= 3) h ^= (data[tail + 2] ?? 0) << 16;
  if (remaining >= 2) h ^= (data[tail + 1] ?? 0) << 8;
  if (remaining >= 1) {
    h ^= data[tail] ?? 0;
    h = Math.imul(h, m);
  }

  h ^= h >>> 13;
  h = Math.imul(h, m);
  h ^= h >>> 15;
  return h | 0;
}

/** Kafka's `Utils.toPositive`: clears the sign bit (not Math.abs, which differs for negatives). */
export function toPositive(n: number): number {
  return n & 0x7fffffff;
}

/** The partition of a keyed record, as the Java client and librdkafka's murmur2 partitioner pick it. */
export function keyPartition(key: Uint8Array, numPartitions: number): number {
  checkPartitionCount(numPartitions);
  return toPositive(murmur2(key)) % numPartitions;
}

/** How records without a key are spread. */
export type NullKeyStrategy = 'round-robin' | 'random';

export interface PartitionerOptions {
  readonly nullKeys?: NullKeyStrategy;
  /** A source of numbers in [0, 1); Math.random unless a test fixes it. */
  readonly random?: () => number;
}

/** Picks partitions: murmur2 for keyed records, the configured strategy for the rest. */
export class Partitioner {
  readonly nullKeys: NullKeyStrategy;
  private readonly random: () => number;
  private readonly counters = new Map<string, number>();

  constructor(options: PartitionerOptions = {}) {
    this.nullKeys = options.nullKeys ?? 'round-robin';
    this.random = options.random ?? Math.random;
  }

  /**
   * The partition for one record of `topic`. `available` lists the partitions that have a leader
   * right now; records without a key go only to those when there are any.
   */
  partition(topic: string, key: Uint8Array | null | undefined, numPartitions: number, available?: readonly number[]): number {
    if (key !== null && key !== undefined) return keyPartition(key, numPartitions);
    checkPartitionCount(numPartitions);
    const choices = available !== undefined && available.length > 0 ? available : undefined;
    const count = choices?.length ?? numPartitions;
    const index = this.nullKeys === 'random' ? Math.floor(this.random() * count) % count : this.nextCounter(topic) % count;
    return choices === undefined ? index : (choices[index] ?? index);
  }

  private nextCounter(topic: string): number {
    const current = this.counters.get(topic) ?? Math.floor(this.random() * 0x7fffffff);
    this.counters.set(topic, (current + 1) & 0x7fffffff);
    return current;
  }
}

function checkPartitionCount(numPartitions: number): void {
  if (!Number.isInteger(numPartitions) || numPartitions < 1) {
    throw new TributaryError({ code: 'INVALID_ARGUMENT', message: `a topic has at least one partition, not ${numPartitions}; was the topic's metadata loaded?` });
  }
}
