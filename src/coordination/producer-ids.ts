/**
 * Producer ids for idempotent producers, never handed out twice: not after a restart, not by two
 * brokers of a cluster. Old ids live on in the logs (each batch carries its producer id), so a
 * reused id would make a new producer's first batch look like an old producer's duplicate.
 *
 * Brokers claim blocks of ids through the coordination store at `/latest_producer_id_block`
 * (Kafka's ZooKeeper path), whose data names the last block claimed:
 *
 *   {"version":1,"broker":<id>,"block_start":"<first id>","block_end":"<last id>","claim":"<random>"}
 *
 * A claim is a conditional write on the node's version, so of two brokers claiming the same next
 * block exactly one succeeds (the other sees BAD_VERSION, re-reads, and claims the block after).
 * No id of a block is handed out before its write is known to have succeeded. After
 * CONNECTION_LOSS, TIMEOUT or SESSION_EXPIRED the outcome is unknown: the node is re-read, and
 * the block is ours only if the node still holds our claim token; otherwise it is abandoned (a
 * gap in the ids is harmless, a reuse is not). Ids are int64; the numbers are kept as strings in the node so that
 * no JSON reader rounds them.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { TributaryError } from '../common/errors.js';
import { latestProducerIdBlockPath } from './paths.js';
import { hasCode, type CoordinationStore, type NodeData } from './store.js';

export const DEFAULT_PRODUCER_ID_BLOCK_SIZE = 1000;
/** Claims lost to other brokers (or to unknown outcomes) before one allocation gives up. */
const MAX_CLAIM_ATTEMPTS = 20;
const RETRY_BACKOFF_MS = 50;
const MAX_PRODUCER_ID = 2n ** 63n - 1n;

interface ProducerIdBlock {
  readonly broker: number;
  readonly first: bigint;
  readonly last: bigint;
  readonly claim: string | undefined;
}

export interface ProducerIdAllocatorOptions {
  readonly store: CoordinationStore;
  /** Recorded in the node for people reading it; ownership is decided by the claim token. */
  readonly brokerId: number;
  readonly blockSize?: number;
}

export class ProducerIdAllocator {
  private readonly blockSize: bigint;
  /** The next id to hand out and the last id of the current block; empty until the first claim. */
  private next = 0n;
  private last = -1n;
  /** One claim at a time; concurrent callers wait for it. */
  private claiming: Promise<void> | undefined;

  constructor(private readonly options: ProducerIdAllocatorOptions) {
    const size = options.blockSize ?? DEFAULT_PRODUCER_ID_BLOCK_SIZE;
    if (!Number.isSafeInteger(size) || size < 1) {
      throw new TributaryError({ code: 'CONFIG_INVALID', message: `producer id block size must be a positive integer, not ${String(size)}` });
    }
    this.blockSize = BigInt(size);
  }

  /** The next unused producer id, claiming a new block first when the current one is spent. */
  async nextProducerId(): Promise<bigint> {
    while (this.next > this.last) {
      this.claiming ??= this.claimBlock().finally(() => {
        this.claiming = undefined;
      });
      await this.claiming;
    }
    const id = this.next;
    this.next += 1n;
    return id;
  }

  private async claimBlock(): Promise<void> {
    const { store, brokerId } = this.options;
    const path = latestProducerIdBlockPath();
    const claim = randomUUID();
    let lastFailure: unknown;
    for (let attempt = 0; attempt < MAX_CLAIM_ATTEMPTS; attempt += 1) {
      if (attempt > 0) await sleep(RETRY_BACKOFF_MS * Math.min(attempt, 10));
      let node: NodeData | undefined;
      try {
        node = await store.get(path);
      } catch (error) {
        if (!isUnknownOutcome(error)) throw allocationError('could not read the latest producer id block', error);
        lastFailure = error;
        continue;
      }
      const current = node === undefined ? undefined : { block: parseBlock(node.data), version: node.version };
      // An earlier attempt whose answer was lost did succeed, and nobody has claimed after it.
      if (current?.block.claim === claim) return this.use(current.block);
      const first = current === undefined ? 0n : current.block.last + 1n;
      const last = first + this.blockSize - 1n;
      if (last > MAX_PRODUCER_ID) {
        throw new TributaryError({ code: 'PRODUCER_IDS_EXHAUSTED', message: `every producer id up to ${MAX_PRODUCER_ID} has been handed out`, details: { path } });
      }
      const block: ProducerIdBlock = { broker: brokerId, first, last, claim };
      try {
        if (current === undefined) await store.create(path, encodeBlock(block), 'persistent');
        else await store.set(path, encodeBlock(block), current.version);
        return this.use(block);
      } catch (error) {
        // Someone else claimed first: read their block and claim the one after it.
        if (hasCode(error, 'BAD_VERSION') || hasCode(error, 'NODE_EXISTS')) {
          lastFailure = error;
          continue;
        }
        // The write may or may not have happened: the next read decides (see the header).
        if (isUnknownOutcome(error)) {
          lastFailure = error;
          continue;
        }
        throw allocationError('could not claim a producer id block', error);
      }
    }
    throw allocationError(`could not claim a producer id block in ${MAX_CLAIM_ATTEMPTS} attempts`, lastFailure, true);
  }

  private use(block: ProducerIdBlock): void {
    this.next = block.first;
    this.last = block.last;
  }
}

/**
 * Failures after which a write may or may not have been applied. SESSION_EXPIRED is among them:
 * the store opens a new session by itself, and the claim token makes re-reading safe.
 */
function isUnknownOutcome(error: unknown): boolean {
  return hasCode(error, 'CONNECTION_LOSS') || hasCode(error, 'TIMEOUT') || hasCode(error, 'ZOOKEEPER_UNREACHABLE') || hasCode(error, 'SESSION_EXPIRED');
}

function allocationError(message: string, cause: unknown, retriable = isUnknownOutcome(cause)): TributaryError {
  return new TributaryError({ code: 'PRODUCER_ID_ALLOCATION_FAILED', message, retriable, cause, details: { path: latestProducerIdBlockPath() } });
}

function encodeBlock(block: ProducerIdBlock): Buffer {
  return Buffer.from(
    JSON.stringify({ version: 1, broker: block.broker, block_start: block.first.toString(), block_end: block.last.toString(), claim: block.claim }),
  );
}

/** Reads Kafka's fields; a node that does not parse is refused rather than guessed over. */
function parseBlock(data: Buffer): ProducerIdBlock {
  const fail = (reason: string): never => {
    throw new TributaryError({
      code: 'PRODUCER_ID_BLOCK_INVALID',
      message: `${latestProducerIdBlockPath()} holds ${JSON.stringify(data.toString('utf8').slice(0, 200))}: ${reason}; fix or remove it by hand (removing it restarts ids at 0, which is safe only on a cluster with empty logs)`,
      details: { path: latestProducerIdBlockPath() },
    });
  };
  let value: unknown;
  try {
    value = JSON.parse(data.toString('utf8'));
  } catch {
    return fail('not JSON');
  }
  if (typeof value !== 'object' || value === null) return fail('not an object');
  const record = value as Record<string, unknown>;
  const id = (name: string): bigint => {
    const field = record[name];
    if ((typeof field !== 'string' && typeof field !== 'number') || !/^\d+$/.test(String(field))) return fail(`${name} is not a non-negative integer`);
    return BigInt(String(field));
  };
  const first = id('block_start');
  const last = id('block_end');
  if (last < first) return fail('block_end is below block_start');
  return { broker: typeof record['broker'] === 'number' ? record['broker'] : -1, first, last, claim: typeof record['claim'] === 'string' ? record['claim'] : undefined };
}
