/**
 * What a run or a replay tells a progress display (progress-bar.ts draws it in a terminal). Every
 * call is optional to act on and must not throw: progress never changes what is loaded.
 */
export interface LoadProgress {
  /** The work ahead: partition ranges to read and the offsets they span. */
  planned(totals: { readonly partitions: number; readonly records: number }): void;
  /** Records of a planned range fetched, and their key + value bytes. */
  fetched(records: number, bytes: number): void;
  /** One partition range read and staged. */
  partitionDone(): void;
  /** Reading is over; the commit (or the swap) follows. */
  finishing(what: string): void;
}
