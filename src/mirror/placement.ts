/**
 * Where a mirrored record goes in the target topic. While the source and target topics have the
 * same number of partitions a record keeps its partition number, so the target partition is a
 * copy of the source partition in order (two sources with the same topic interleave into it).
 * Otherwise a keyed record goes where our producer (and the Java client) would put its key
 * (murmur2), and a record without a key is left to the producer's round-robin.
 */
import { keyPartition } from '../client/partitioner.js';

/** The target partition, or undefined to let the producer spread a record without a key. */
export function targetPartition(sourcePartition: number, sourcePartitions: number, targetPartitions: number, key: Buffer | null): number | undefined {
  if (sourcePartitions === targetPartitions && sourcePartition < targetPartitions) return sourcePartition;
  return key === null ? undefined : keyPartition(key, targetPartitions);
}
