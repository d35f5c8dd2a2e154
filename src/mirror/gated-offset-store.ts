/**
 * A coordination store that holds every write of the group's offsets
 * (`/consumers/<group>/offsets/<topic>/<partition>`) until the commit gate admits it, and passes
 * everything else straight through.
 *
 * The mirror hands this store to its ZooKeeper consumers because they commit on three paths —
 * when asked, before releasing partitions in a rebalance, and when closing — and always the
 * offset after the last message handed out, acknowledged by the target or not. Gating the write
 * itself keeps the commit rule on all three without changing the consumer.
 *
 * The same holds for reads: the consumer reads a partition's offset node each time it gains the
 * partition (start, every rebalance), and takes it as where to fetch from. This store answers that
 * read with the resume point the mirror finds in the target (resume-point.ts) instead, and writes
 * the commit's target position (progress-nodes.ts) in the transaction of every offset commit.
 */
import { offsetPath, offsetsPath, ownerPath } from '../coordination/paths.js';
import {
  hasCode,
  type CoordinationStore,
  type CreateMode,
  type NodeData,
  type SessionListener,
  type TransactionOp,
  type TransactionResult,
  type Watcher,
} from '../coordination/store.js';
import type { CommitGate } from './commit-gate.js';
import { encodePosition, positionPath } from './progress-nodes.js';

/** The offset to fetch a partition from, given the committed one (undefined: never committed). */
export type ResumeOffset = (topic: string, partition: number, committed: bigint | undefined) => Promise<bigint | undefined>;

export class GatedOffsetStore implements CoordinationStore {
  private readonly offsetsPrefix: string;

  constructor(
    private readonly store: CoordinationStore,
    private readonly group: string,
    private readonly gate: CommitGate,
    private readonly resumeOffset: ResumeOffset,
  ) {
    this.offsetsPrefix = `${offsetsPath(group)}/`;
  }

  async create(path: string, data: Buffer, mode: CreateMode): Promise<string> {
    await this.admit(path, data);
    return this.store.create(path, data, mode);
  }

  async set(path: string, data: Buffer, expectedVersion?: number): Promise<number> {
    await this.admit(path, data);
    return this.store.set(path, data, expectedVersion);
  }

  async transaction(ops: readonly TransactionOp[]): Promise<TransactionResult[]> {
    const positions: TransactionOp[] = [];
    for (const op of ops) {
      if (op.op !== 'create' && op.op !== 'set') continue;
      const partition = await this.admit(op.path, op.data);
      if (partition !== undefined) positions.push(...(await this.positionOps(partition.topic, partition.partition)));
    }
    return (await this.store.transaction([...ops, ...positions])).slice(0, ops.length);
  }

  ensurePath(path: string): Promise<void> {
    return this.store.ensurePath(path);
  }

  async get(path: string, watcher?: Watcher): Promise<NodeData | undefined> {
    const node = await this.store.get(path, watcher);
    const partition = this.offsetNode(path);
    if (partition === undefined) return node;
    const text = node?.data.toString('utf8').trim();
    const committed = text !== undefined && /^\d+$/.test(text) ? BigInt(text) : undefined;
    const resume = await this.resumeOffset(partition.topic, partition.partition, committed);
    if (resume === undefined) return node;
    const data = Buffer.from(resume.toString());
    if (node === undefined) {
      // The consumer commits only once it consumed past where it started: record the start now, so the group has an offset from its first claim.
      return { data, version: await this.createOffset(partition.topic, partition.partition, data) };
    }
    return { data, version: node.version };
  }

  delete(path: string, expectedVersion?: number): Promise<void> {
    return this.store.delete(path, expectedVersion);
  }

  deleteRecursive(path: string): Promise<void> {
    return this.store.deleteRecursive(path);
  }

  exists(path: string, watcher?: Watcher): Promise<boolean> {
    return this.store.exists(path, watcher);
  }

  children(path: string, watcher?: Watcher): Promise<string[] | undefined> {
    return this.store.children(path, watcher);
  }

  onSessionEvent(listener: SessionListener): () => void {
    return this.store.onSessionEvent(listener);
  }

  sessionId(): string {
    return this.store.sessionId();
  }

  close(): Promise<void> {
    return this.store.close();
  }

  /** Waits for the gate when `path` is one of the group's offset nodes holding an offset; returns its partition then. */
  private async admit(path: string, data: Buffer | undefined): Promise<{ topic: string; partition: number } | undefined> {
    const partition = this.offsetNode(path);
    const text = data?.toString('utf8').trim() ?? '';
    if (partition === undefined || !/^\d+$/.test(text)) return undefined;
    await this.gate.admit(partition.topic, partition.partition, BigInt(text));
    return partition;
  }

  /** The partition whose offset node `path` is, if it is one. */
  private offsetNode(path: string): { topic: string; partition: number } | undefined {
    if (!path.startsWith(this.offsetsPrefix)) return undefined;
    const [topic, partitionText, ...rest] = path.slice(this.offsetsPrefix.length).split('/');
    if (topic === undefined || partitionText === undefined || rest.length > 0 || !/^\d+$/.test(partitionText)) return undefined;
    return { topic, partition: Number(partitionText) };
  }

  /** Creates the offset node while this consumer owns the partition (it just claimed it); the version of the node then. */
  private async createOffset(topic: string, partition: number, data: Buffer): Promise<number> {
    await this.store.ensurePath(offsetsPath(this.group, topic));
    try {
      await this.store.transaction([
        { op: 'check', path: ownerPath(this.group, topic, partition) },
        { op: 'create', path: offsetPath(this.group, topic, partition), data, mode: 'persistent' },
      ]);
    } catch (error) {
      // Another writer got there first, or the ownership is gone: the consumer's own fenced commits decide from here.
      if (!hasCode(error, 'NODE_EXISTS') && !hasCode(error, 'NO_NODE')) throw error;
    }
    return 0;
  }

  /** Writes the target position of the commit, when this process knows it, with the commit itself. */
  private async positionOps(topic: string, partition: number): Promise<TransactionOp[]> {
    const position = this.gate.position(topic, partition);
    if (position === undefined) return [];
    const path = positionPath(this.group, topic, partition);
    const data = encodePosition(position);
    if (await this.store.exists(path)) return [{ op: 'set', path, data }];
    await this.store.ensurePath(path.slice(0, path.lastIndexOf('/')));
    return [{ op: 'create', path, data, mode: 'persistent' }];
  }
}
