/**
 * The streams a ZooKeeperConsumer hands out: each is an async iterable over a bounded queue that
 * the fetchers of the partitions assigned to it fill. A full queue makes the fetchers wait
 * (backpressure). A stream never ends by itself — it waits for new data — only `close()` ends it,
 * and a consumer that cannot rebalance fails it with the error.
 */
import type { RecordHeader } from '../../protocol/records.js';

export interface Message {
  readonly topic: string;
  readonly partition: number;
  readonly offset: bigint;
  /**
   * The partition holds no record in [from, offset): `from` is one past the message handed out
   * before it from the same claim of the partition (or where the claim started fetching). Equal to
   * `offset` unless compaction removed the records between (or a reset skipped over them).
   */
  readonly from: bigint;
  readonly key: Buffer | null;
  readonly value: Buffer | null;
  readonly headers: readonly RecordHeader[];
  readonly timestamp: number;
}

/** A queued message with the claim it was fetched under; a stale claim's messages are skipped. */
export interface QueuedMessage {
  readonly message: Message;
  /** False once the partition was released (rebalance, seek, expiry): then the message is dropped. */
  readonly current: () => boolean;
  /** Called when the message is handed to the application (advances the consumed offset). */
  readonly delivered: () => void;
}

export class MessageStream implements AsyncIterable<Message> {
  private readonly queue: QueuedMessage[] = [];
  private readers: ((entry: QueuedMessage | undefined) => void)[] = [];
  private writers: (() => void)[] = [];
  private ended = false;
  private failure: Error | undefined;
  private failReaders: ((error: Error) => void)[] = [];

  constructor(
    readonly topic: string,
    readonly index: number,
    private readonly capacity: number,
  ) {}

  /** How many messages wait in the queue. */
  get size(): number {
    return this.queue.length;
  }

  /**
   * Waits while the queue is full; resolves early when `wake()` or `close()` is called, or when
   * `stop` aborts (a fetcher told to stop must not wait for a reader that may never come).
   */
  async waitForSpace(stop?: AbortSignal): Promise<void> {
    if (this.ended || this.queue.length < this.capacity || stop?.aborted === true) return;
    await new Promise<void>((resolve) => {
      const done = (): void => {
        stop?.removeEventListener('abort', done);
        this.writers = this.writers.filter((writer) => writer !== done);
        resolve();
      };
      this.writers.push(done);
      stop?.addEventListener('abort', done, { once: true });
    });
  }

  /** Adds a message (callers wait for space first; a closed stream drops it). */
  push(entry: QueuedMessage): void {
    if (this.ended) return;
    const reader = this.readers.shift();
    if (reader !== undefined) {
      this.failReaders.shift();
      reader(entry);
    } else {
      this.queue.push(entry);
    }
  }

  /** Drops the queued messages whose claim is no longer current, and wakes waiting writers. */
  purge(): void {
    const keep = this.queue.filter((entry) => entry.current());
    this.queue.length = 0;
    this.queue.push(...keep);
    this.wake();
  }

  /** Releases every writer waiting for space (they re-check whether they should stop). */
  wake(): void {
    const writers = this.writers;
    this.writers = [];
    for (const writer of writers) writer();
  }

  /** Ends the stream: pending and later reads finish (`done`). */
  close(): void {
    this.ended = true;
    this.queue.length = 0;
    const readers = this.readers;
    this.readers = [];
    this.failReaders = [];
    for (const reader of readers) reader(undefined);
    this.wake();
  }

  /** Fails the stream: pending and later reads throw `error`. */
  fail(error: Error): void {
    this.failure = error;
    this.ended = true;
    this.queue.length = 0;
    const failReaders = this.failReaders;
    this.readers = [];
    this.failReaders = [];
    for (const fail of failReaders) fail(error);
    this.wake();
  }

  private async take(): Promise<QueuedMessage | undefined> {
    for (;;) {
      if (this.failure !== undefined) throw this.failure;
      const entry = this.queue.shift();
      if (entry !== undefined) {
        if (this.queue.length < this.capacity) this.wake();
        if (!entry.current()) continue;
        return entry;
      }
      if (this.ended) return undefined;
      const next = await new Promise<QueuedMessage | undefined>((resolve, reject) => {
        this.readers.push(resolve);
        this.failReaders.push(reject);
      });
      if (next === undefined) return undefined;
      if (next.current()) return next;
    }
  }

  [Symbol.asyncIterator](): AsyncIterator<Message> {
    return {
      next: async (): Promise<IteratorResult<Message>> => {
        const entry = await this.take();
        if (entry === undefined) return { done: true, value: undefined };
        entry.delivered();
        return { done: false, value: entry.message };
      },
      return: async (): Promise<IteratorResult<Message>> => ({ done: true, value: undefined }),
    };
  }
}
