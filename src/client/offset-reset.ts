/**
 * Where `tributary groups reset-offsets` moves a group's offsets: the same rules for both kinds
 * of group (the paper's ZooKeeper groups and broker-coordinated ones); only the way the chosen
 * offsets are stored differs.
 */
import type { SimpleConsumer } from './simple-consumer.js';

export type ResetTarget =
  | { readonly kind: 'earliest' }
  | { readonly kind: 'latest' }
  | { readonly kind: 'offset'; readonly offset: bigint }
  | { readonly kind: 'datetime'; readonly timestamp: number }
  | { readonly kind: 'shift'; readonly by: bigint };

/**
 * The new offset of each partition of `topic`, kept inside what the log holds (an offset outside
 * it would only bounce off the consumer's reset policy). `committed` gives the current offset,
 * for --shift-by (a partition without one shifts from the log end).
 */
export async function chooseResetOffsets(
  consumer: SimpleConsumer,
  topic: string,
  partitions: readonly number[],
  target: ResetTarget,
  committed: (partition: number) => Promise<bigint | undefined>,
): Promise<Map<number, bigint>> {
  const chosen = new Map<number, bigint>();
  for (const partition of partitions) {
    const earliest = await consumer.listOffset(topic, partition, 'earliest');
    const latest = await consumer.listOffset(topic, partition, 'latest');
    let offset: bigint;
    switch (target.kind) {
      case 'earliest':
        offset = earliest;
        break;
      case 'latest':
        offset = latest;
        break;
      case 'offset':
        offset = target.offset;
        break;
      case 'datetime': {
        const found = await consumer.listOffset(topic, partition, { timestamp: target.timestamp });
        offset = found < 0n ? latest : found;
        break;
      }
      case 'shift':
        offset = ((await committed(partition)) ?? latest) + target.by;
        break;
    }
    chosen.set(partition, offset < earliest ? earliest : offset > latest ? latest : offset);
  }
  return chosen;
}
