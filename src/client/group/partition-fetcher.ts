/**
 * The ZooKeeper consumer's per-partition fetch loops: a claim (one owned partition and its
 * positions) and the fetcher that reads it from its leader into a stream, stepping by batches over
 * what compaction removed and moving an offset outside the log as autoOffsetReset says. Apart
 * from zookeeper-consumer.ts, which decides when fetchers start and stop (rebalance, seek,
 * pause); the loops reach the consumer only through FetcherHost.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { TributaryError } from '../../common/errors.js';
import type { Logger } from '../../common/logger.js';
import type { ClusterClient } from '../cluster-client.js';
import type { SimpleConsumer } from '../simple-consumer.js';
import type { AutoOffsetReset, GroupOffsets } from './group-offsets.js';
import type { Message, MessageStream } from './stream.js';

/** One partition this consumer owns right now. */
export interface Claim {
  readonly topic: string;
  readonly partition: number;
  readonly threadId: string;
  readonly stream: MessageStream;
  /**
   * Next offset to fetch: past the last batch fetched, which on a compacted topic may end in
   * removed records (Kafka's rule: step by batches, not by records).
   */
  fetchOffset: bigint;
  /**
   * One past the last record pushed to the stream, or where fetching (re)started: the partition
   * holds no record from here to the next record fetched (each message's `from`).
   */
  pushedEnd: bigint;
  /** Next offset after the last message handed to the application: what a commit stores. */
  consumed: bigint;
  /** The last offset committed (or read from the registry). */
  committed: bigint | undefined;
  active: boolean;
  fetcher: Fetcher | undefined;
}

export interface Fetcher {
  stopped: boolean;
  /** Aborted with `stopped`: releases a fetcher waiting for room in a full stream. */
  readonly stop: AbortController;
  done: Promise<void>;
}

/** What the fetch loops need of their consumer. */
export interface FetcherHost {
  readonly simple: SimpleConsumer;
  readonly cluster: ClusterClient;
  readonly logger: Logger;
  readonly group: string;
  readonly options: {
    readonly autoOffsetReset?: AutoOffsetReset;
    readonly fetchWaitMaxMs?: number;
    readonly fetchMaxBytes?: number;
  };
  readonly offsets: Pick<GroupOffsets, 'resetOffset'>;
  isClosed(): boolean;
  /** Fetchers stopped after a long disconnection or a freeze (claims kept): none starts. */
  isPaused(): boolean;
  /** False after the process did not run for a while: the message about to be handed out is dropped. */
  awake(): boolean;
  /** Fails the consumer: every stream throws `error`. */
  fatal(error: Error): void;
  /** Counts a fetch offset outside the log that autoOffsetReset moved. */
  countOffsetReset(): void;
}

/** The key of a claim in the consumer's map of claims. */
export const claimKey = (topic: string, partition: number): string => `${topic}/${partition}`;

export class PartitionFetchers {
  constructor(private readonly host: FetcherHost) {}

  start(claim: Claim): void {
    if (claim.fetcher !== undefined || !claim.active || this.host.isPaused()) return;
    const fetcher: Fetcher = { stopped: false, stop: new AbortController(), done: Promise.resolve() };
    fetcher.done = this.fetchLoop(claim, fetcher);
    claim.fetcher = fetcher;
  }

  async stop(claim: Claim): Promise<void> {
    const fetcher = claim.fetcher;
    if (fetcher === undefined) return;
    haltFetcher(fetcher);
    await fetcher.done;
    claim.fetcher = undefined;
  }

  async stopAll(claims: Iterable<Claim>): Promise<void> {
    await Promise.all([...claims].map((claim) => this.stop(claim)));
  }

  private async fetchLoop(claim: Claim, fetcher: Fetcher): Promise<void> {
    const host = this.host;
    const running = (): boolean => !fetcher.stopped && claim.active && !host.isClosed();
    let failures = 0;
    while (running()) {
      await claim.stream.waitForSpace(fetcher.stop.signal);
      if (!running()) return;
      try {
        const result = await host.simple.fetch(claim.topic, claim.partition, claim.fetchOffset, {
          maxWaitMs: host.options.fetchWaitMaxMs ?? 500,
          maxBytes: host.options.fetchMaxBytes ?? 1024 * 1024,
        });
        failures = 0;
        for (const record of result.records) {
          await claim.stream.waitForSpace(fetcher.stop.signal);
          if (!running()) return;
          const message: Message = {
            topic: claim.topic,
            partition: claim.partition,
            offset: record.offset,
            from: claim.pushedEnd < record.offset ? claim.pushedEnd : record.offset,
            key: record.key,
            value: record.value,
            headers: record.headers,
            timestamp: record.timestamp,
          };
          claim.stream.push({
            message,
            current: () => claim.active && host.awake() && claim.active,
            delivered: () => {
              if (claim.active && record.offset + 1n > claim.consumed) claim.consumed = record.offset + 1n;
            },
          });
          claim.fetchOffset = record.offset + 1n;
          claim.pushedEnd = record.offset + 1n;
        }
        // Past the last batch: records it (or whole batches before it) lost to compaction are stepped over.
        if (result.nextOffset > claim.fetchOffset) claim.fetchOffset = result.nextOffset;
      } catch (caught) {
        if (!running()) return;
        let error = caught;
        if (error instanceof TributaryError && error.code === 'OFFSET_OUT_OF_RANGE') {
          const policy = host.options.autoOffsetReset ?? 'largest';
          const bounds = `log start ${String(error.details['logStartOffset'])}, high watermark ${String(error.details['highWatermark'])}`;
          if (policy === 'none') {
            // Never silently: the records between the offset and the log start are gone for this group.
            host.fatal(
              new TributaryError({
                code: 'OFFSET_OUT_OF_RANGE',
                message: `${claim.topic}-${claim.partition}: offset ${claim.fetchOffset} of group ${host.group} is outside the log (${bounds}), and autoOffsetReset is 'none'; move the group's offset (tributary groups reset-offsets) or choose 'smallest' or 'largest'`,
                cause: error,
                details: { group: host.group, topic: claim.topic, partition: claim.partition, offset: claim.fetchOffset.toString(), logStartOffset: error.details['logStartOffset'], highWatermark: error.details['highWatermark'] },
              }),
            );
            return;
          }
          try {
            const reset = await host.offsets.resetOffset(claim.topic, claim.partition);
            if (!running()) return;
            host.countOffsetReset();
            host.logger.warn(
              { topic: claim.topic, partition: claim.partition, from: claim.fetchOffset.toString(), to: reset.toString(), autoOffsetReset: policy, logStartOffset: String(error.details['logStartOffset']), highWatermark: String(error.details['highWatermark']) },
              `offset ${claim.fetchOffset} of ${claim.topic}-${claim.partition} is outside the log (${bounds}); autoOffsetReset=${policy} moved it to ${reset}`,
            );
            claim.fetchOffset = reset;
            claim.pushedEnd = reset;
            claim.consumed = reset;
            continue;
          } catch (resetError) {
            error = resetError;
          }
        }
        failures += 1;
        host.logger.warn({ err: error, topic: claim.topic, partition: claim.partition, failures }, 'fetch failed; retrying');
        await sleep(Math.min(100 * 2 ** Math.min(failures, 5), 3000));
        await host.cluster.refreshMetadata([claim.topic]).catch(() => undefined);
      }
    }
  }
}

export function haltFetcher(fetcher: Fetcher): void {
  fetcher.stopped = true;
  fetcher.stop.abort();
}
