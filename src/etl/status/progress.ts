/**
 * What a run or a replay tells a progress display (progress-bar.ts draws it in a terminal,
 * progress-log.ts logs it every few seconds). Every call is optional to act on and must not
 * throw: progress never changes what is loaded.
 */
export interface LoadProgress {
  /** The work ahead: partition ranges to read and the offsets they span. */
  planned(totals: { readonly partitions: number; readonly records: number }): void;
  /** Records of a planned range fetched, and their key + value bytes; `task` says which task fetched them. */
  fetched(records: number, bytes: number, task?: ProgressTask): void;
  /** One task read and staged (a partition's last task is followed by partitionDone). */
  taskDone?(task: ProgressTask): void;
  /** One partition range read and staged. */
  partitionDone(): void;
  /** Reading is over; the commit (or the swap) follows. */
  finishing(what: string): void;
}

/** A task: the offsets [start, end) of one topic-partition (a run's slice, a replay's range). */
export interface ProgressTask {
  readonly topic: string;
  readonly partition: number;
  readonly start: number;
  readonly end: number;
}
