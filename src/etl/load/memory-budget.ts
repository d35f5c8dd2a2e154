/**
 * The memory a loader process lets its open data files hold (the load file's `memoryBudget`).
 * What an open file buffers — Avro blocks waiting for their header, Parquet rows waiting for their
 * row group, Parquet row groups waiting for their footer — sits in SpillBuffers (spill.ts), which
 * take their in-memory bytes from the budget. When a take would pass the limit, the holders with
 * the most bytes in memory move them to their local spill files until the rest fits, so a 24-hour
 * catch-up, many partitions or late events spread over days cost disk, not memory. Spilling
 * changes where bytes wait, never which bytes a file gets: row groups and blocks are closed by the
 * file's own rows alone, so a file's bytes do not depend on what else the process was doing.
 *
 * Encoding a Parquet row group needs its rows as JavaScript values for a moment: `exclusive`
 * runs one such encoding at a time per process and reserves an estimate of its size first.
 *
 * Bytes handed to a spill file stay counted until they are written; writers wait for them
 * between fetches (`drain`) when the budget is passed, so writes in flight cannot pile up.
 *
 * One budget per limit and process (`memoryBudget`): the tasks of one run, and the tasks a worker
 * process runs at once, share it.
 */

/** Something holding bytes in memory that it can move to disk. */
export interface BudgetHolder {
  /** Bytes it holds in memory now. */
  readonly memoryBytes: number;
  /** Starts moving them to disk (the holder gives them back with `release` once written). */
  spill(): void;
  /** Resolves once what it started writing is written. */
  drain(): Promise<void>;
}

export const DEFAULT_MEMORY_BUDGET_BYTES = 16 * 1024 * 1024;
/** A Parquet row group closes at no more than this share of the budget (its rows' Avro bytes). */
export const ROW_GROUP_SHARE_OF_BUDGET = 1 / 8;
/** Rows as JavaScript values take about this many times their Avro bytes while a row group is encoded. */
export const ENCODING_EXPANSION = 4;

export class MemoryBudget {
  private used = 0;
  private readonly holders = new Set<BudgetHolder>();
  private encoding: Promise<void> = Promise.resolve();
  /** Highest `used` seen (figures and tests). */
  peak = 0;
  /** Times a holder was told to spill. */
  spills = 0;

  constructor(readonly limit: number) {}

  get usedBytes(): number {
    return this.used;
  }

  register(holder: BudgetHolder): void {
    this.holders.add(holder);
  }

  unregister(holder: BudgetHolder): void {
    this.holders.delete(holder);
  }

  /** Counts `bytes` as held in memory, spilling the largest holders first if they would not fit. */
  take(bytes: number): void {
    this.makeRoom(bytes);
    this.used += bytes;
    if (this.used > this.peak) this.peak = this.used;
  }

  release(bytes: number): void {
    this.used = Math.max(0, this.used - bytes);
  }

  /**
   * Waits for the holders' writes to disk while more than the limit is in use: writers call it
   * between fetches, so bytes spilled but not yet written cannot pile up beyond the budget.
   */
  async drain(): Promise<void> {
    if (this.used <= this.limit) return;
    await Promise.all([...this.holders].map((holder) => holder.drain().catch(() => undefined)));
  }

  /** Runs `work` alone among this budget's exclusive work, with `bytes` reserved while it runs. */
  exclusive<T>(bytes: number, work: () => Promise<T>): Promise<T> {
    const run = this.encoding.then(async () => {
      this.take(bytes);
      try {
        return await work();
      } finally {
        this.release(bytes);
      }
    });
    this.encoding = run.then(
      () => undefined,
      () => undefined,
    );
    return run;
  }

  /** Spills the largest holders until what stays in memory, once their writes land, fits. */
  private makeRoom(bytes: number): void {
    let excess = this.used + bytes - this.limit;
    if (excess <= 0) return;
    const largestFirst = [...this.holders].filter((holder) => holder.memoryBytes > 0).sort((a, b) => b.memoryBytes - a.memoryBytes);
    for (const holder of largestFirst) {
      if (excess <= 0) return;
      excess -= holder.memoryBytes;
      this.spills += 1;
      holder.spill();
    }
  }
}

const budgets = new Map<number, MemoryBudget>();

/** The process's budget of `limit` bytes. */
export function memoryBudget(limit: number = DEFAULT_MEMORY_BUDGET_BYTES): MemoryBudget {
  let budget = budgets.get(limit);
  if (budget === undefined) budgets.set(limit, (budget = new MemoryBudget(limit)));
  return budget;
}

/** The row group size a load writes: its rowGroupBytes, at most the budget's share. */
export function effectiveRowGroupBytes(rowGroupBytes: number, budget: MemoryBudget): number {
  return Math.max(64 * 1024, Math.min(rowGroupBytes, Math.floor(budget.limit * ROW_GROUP_SHARE_OF_BUDGET)));
}
