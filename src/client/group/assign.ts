/**
 * The range assignment of the paper's Algorithm 1, as Kafka 0.8's high-level consumer does it:
 * sort the partitions of a topic and the consumer threads subscribing to it, give each thread a
 * contiguous range of ⌊P/C⌋ partitions, and one more to each of the first P mod C threads.
 *
 * Every member of a group runs this on its own view of the registries; as long as the views
 * agree, the members' answers are disjoint and together cover every partition exactly once.
 * Pure: no I/O, inputs are not modified.
 */

/** Thread ids sort by code unit (not locale), so every member sorts them the same way. */
export function compareThreadIds(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** The partitions `thisThread` owns; empty when it is not among `threads` or there are no partitions. */
export function assignRange(partitions: readonly number[], threads: readonly string[], thisThread: string): number[] {
  return assignAll(partitions, threads).get(thisThread) ?? [];
}

/** Every thread's partitions (threads without any map to an empty list). Duplicate inputs count once. */
export function assignAll(partitions: readonly number[], threads: readonly string[]): Map<string, number[]> {
  const sortedPartitions = [...new Set(partitions)].sort((a, b) => a - b);
  const sortedThreads = [...new Set(threads)].sort(compareThreadIds);
  const result = new Map<string, number[]>();
  const count = sortedThreads.length;
  if (count === 0) return result;
  const perThread = Math.floor(sortedPartitions.length / count);
  const withExtra = sortedPartitions.length % count;
  sortedThreads.forEach((thread, index) => {
    const start = perThread * index + Math.min(index, withExtra);
    const size = perThread + (index < withExtra ? 1 : 0);
    result.set(thread, sortedPartitions.slice(start, start + size));
  });
  return result;
}
