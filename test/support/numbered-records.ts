/**
 * Numbered records: a producer sends records whose value is their sequence number 0..count-1
 * (decimal), and the test reads the whole topic back with kcat to count what came back once,
 * twice or never, and whether each partition holds its numbers in send order.
 */
import { kcatRaw } from './kcat.js';

export interface StoredNumber {
  readonly partition: number;
  readonly offset: number;
  /** The record's value as a number (NaN when it is not one). */
  readonly value: number;
}

/** Every record of every partition of `topic`, read with kcat from the beginning to the end. */
export async function readNumbers(bootstrap: string, topic: string, timeoutMs = 180_000): Promise<StoredNumber[]> {
  const result = await kcatRaw(['-b', bootstrap, '-C', '-t', topic, '-o', 'beginning', '-e', '-q', '-f', '%p %o %s\n'], undefined, timeoutMs);
  if (result.status !== 0) throw new Error(`kcat could not read ${topic}: ${result.stderr}`);
  const stored: StoredNumber[] = [];
  for (const line of result.stdout.toString('utf8').split('\n')) {
    if (line === '') continue;
    const [partition, offset, value] = line.split(' ');
    stored.push({ partition: Number(partition), offset: Number(offset), value: value === undefined || value === '' ? NaN : Number(value) });
  }
  return stored;
}

export interface Tally {
  /** Records stored. */
  readonly stored: number;
  /** Distinct numbers stored. */
  readonly distinct: number;
  /** Extra copies: stored − distinct (a number stored three times counts 2). */
  readonly duplicates: number;
  /** Numbers stored more than once (the first few). */
  readonly duplicated: number[];
  /** Numbers in 0..count-1 not stored. */
  readonly missing: number[];
  /** Stored values that are not a number in 0..count-1 (the first few), and how many. */
  readonly unexpected: StoredNumber[];
  readonly invalid: number;
  /** Records whose number is not greater than the one before it in its partition (the first few), and how many. */
  readonly outOfOrder: { readonly count: number; readonly first: { partition: number; offset: number; value: number; previous: number }[] };
  /** Records not in the partition the producer chose (`partitionOf`; the first few), and how many. */
  readonly misplaced: { readonly count: number; readonly first: StoredNumber[] };
}

/**
 * Counts what came back of numbers 0..count-1. With `partitionOf`, each number must be in that
 * partition. Order is checked per partition in offset order: each number must be greater than the
 * one stored before it (true when the producer sends each partition's numbers in increasing order
 * and the log keeps send order).
 */
export function tally(stored: readonly StoredNumber[], count: number, partitionOf?: (n: number) => number): Tally {
  const copies = new Uint32Array(count);
  const unexpected: StoredNumber[] = [];
  let invalid = 0;
  const byPartition = new Map<number, StoredNumber[]>();
  let misplacedCount = 0;
  const misplaced: StoredNumber[] = [];
  for (const record of stored) {
    if (!Number.isInteger(record.value) || record.value < 0 || record.value >= count) {
      invalid += 1;
      if (unexpected.length < 10) unexpected.push(record);
      continue;
    }
    copies[record.value] = (copies[record.value] ?? 0) + 1;
    if (partitionOf !== undefined && partitionOf(record.value) !== record.partition) {
      misplacedCount += 1;
      if (misplaced.length < 10) misplaced.push(record);
    }
    let list = byPartition.get(record.partition);
    if (list === undefined) byPartition.set(record.partition, (list = []));
    list.push(record);
  }
  let distinct = 0;
  const duplicated: number[] = [];
  const missing: number[] = [];
  for (let n = 0; n < count; n += 1) {
    const c = copies[n] ?? 0;
    if (c > 0) distinct += 1;
    if (c > 1 && duplicated.length < 10) duplicated.push(n);
    if (c === 0) missing.push(n);
  }
  let outOfOrderCount = 0;
  const outOfOrder: Tally['outOfOrder']['first'] = [];
  for (const [partition, records] of byPartition) {
    records.sort((a, b) => a.offset - b.offset);
    for (let i = 1; i < records.length; i += 1) {
      const previous = records[i - 1]?.value ?? -1;
      const record = records[i];
      if (record !== undefined && record.value <= previous) {
        outOfOrderCount += 1;
        if (outOfOrder.length < 10) outOfOrder.push({ partition, offset: record.offset, value: record.value, previous });
      }
    }
  }
  const valid = stored.length - invalid;
  return {
    stored: stored.length,
    distinct,
    duplicates: valid - distinct,
    duplicated,
    missing,
    unexpected,
    invalid,
    outOfOrder: { count: outOfOrderCount, first: outOfOrder },
    misplaced: { count: misplacedCount, first: misplaced },
  };
}

/** One line of figures for the test's output. */
export function describeTally(t: Tally): string {
  return `${t.stored} stored, ${t.distinct} distinct, ${t.duplicates} duplicates${t.duplicated.length > 0 ? ` (e.g. ${t.duplicated.slice(0, 5).join(', ')})` : ''}, ` +
    `${t.missing.length} missing${t.missing.length > 0 ? ` (e.g. ${t.missing.slice(0, 5).join(', ')})` : ''}, ${t.outOfOrder.count} out of order, ` +
    `${t.misplaced.count} in the wrong partition, ${t.invalid} unexpected values`;
}
