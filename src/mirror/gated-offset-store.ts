/**
 * A coordination store that holds every write of the group's offsets
 * (`/consumers/<group>/offsets/<topic>/<partition>`) until the commit gate admits it, and passes
 * everything else straight through.
 *
 * The mirror hands this store to its ZooKeeper consumers because they commit on three paths —
 * when asked, before releasing partitions in a rebalance, and when closing — and always the
 * offset after the last message handed out, acknowledged by the target or not. Gating the write
 * itself keeps the commit rule on all three without changing the consumer.
 */
import { offsetsPath } from '../coordination/paths.js';
import type {
  CoordinationStore,
  CreateMode,
  NodeData,
  SessionListener,
  TransactionOp,
  TransactionResult,
  Watcher,
} from '../coordination/store.js';
import type { CommitGate } from './commit-gate.js';

export class GatedOffsetStore implements CoordinationStore {
  private readonly offsetsPrefix: string;

  constructor(
    private readonly store: CoordinationStore,
    group: string,
    private readonly gate: CommitGate,
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
    for (const op of ops) if (op.op === 'create' || op.op === 'set') await this.admit(op.path, op.data);
    return this.store.transaction(ops);
  }

  ensurePath(path: string): Promise<void> {
    return this.store.ensurePath(path);
  }

  get(path: string, watcher?: Watcher): Promise<NodeData | undefined> {
    return this.store.get(path, watcher);
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

  /** Waits for the gate when `path` is one of the group's offset nodes holding an offset. */
  private async admit(path: string, data: Buffer | undefined): Promise<void> {
    if (!path.startsWith(this.offsetsPrefix)) return;
    const [topic, partitionText, ...rest] = path.slice(this.offsetsPrefix.length).split('/');
    const text = data?.toString('utf8').trim() ?? '';
    if (topic === undefined || partitionText === undefined || rest.length > 0 || !/^\d+$/.test(partitionText) || !/^\d+$/.test(text)) return;
    await this.gate.admit(topic, Number(partitionText), BigInt(text));
  }
}
