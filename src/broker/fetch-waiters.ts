/**
 * Long polling for Fetch: a request that found too few bytes parks here until one of its
 * partitions' high watermark moves (new flushed records) or its MaxWaitMs runs out.
 */
export class FetchWaiters {
  private readonly waiting = new Map<string, Set<() => void>>();

  static key(topic: string, partition: number): string {
    return `${topic}\u0000${partition}`;
  }

  /** Wakes every parked fetch that reads this partition. */
  notify(topic: string, partition: number): void {
    const wakers = this.waiting.get(FetchWaiters.key(topic, partition));
    if (wakers === undefined) return;
    for (const wake of [...wakers]) wake();
  }

  /**
   * Resolves `true` when any of `partitions` advances, `false` after `timeoutMs`, or early when
   * `abandoned` says the client is gone.
   */
  wait(partitions: readonly string[], timeoutMs: number, abandoned: { onAbandon(listener: () => void): void }): Promise<boolean> {
    return new Promise((resolve) => {
      let settled = false;
      const finish = (woken: boolean): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        for (const key of partitions) {
          const set = this.waiting.get(key);
          set?.delete(wake);
          if (set?.size === 0) this.waiting.delete(key);
        }
        resolve(woken);
      };
      const wake = (): void => finish(true);
      const timer = setTimeout(() => finish(false), Math.max(0, timeoutMs));
      for (const key of partitions) {
        let set = this.waiting.get(key);
        if (set === undefined) {
          set = new Set();
          this.waiting.set(key, set);
        }
        set.add(wake);
      }
      abandoned.onAbandon(() => finish(false));
    });
  }

  get parkedCount(): number {
    let count = 0;
    for (const set of this.waiting.values()) count += set.size;
    return count;
  }
}
