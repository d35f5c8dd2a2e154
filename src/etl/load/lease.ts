/**
 * The run lease of a load: the ephemeral node `/etl/locks/<load>` (ARCHITECTURE.md, ZooKeeper
 * layout) says which run may work; a second run finds it taken and stops with ETL_LOAD_BUSY.
 * Each run also takes a run number: the version of the persistent node `/etl/runs/<load>` after
 * bumping it (1, 2, …), recorded in the lock and the manifest.
 *
 * The lease keeps two runs from working at once; it cannot stop a run that lost it without
 * noticing (paused past its session timeout). That run is stopped by the warehouse: its commit
 * claim finds the seq taken (commit.ts). The lease is checked once more just before claiming.
 *
 * Lock node data (JSON): {"load","attempt","runNumber","pid","host","acquiredAt"}.
 */
import { hostname } from 'node:os';
import type { CoordinationStore } from '../../coordination/store.js';
import { hasCode } from '../../coordination/store.js';
import { etlLockPath, etlLocksPath, pathSegment } from '../../coordination/paths.js';
import { etlError } from '../errors.js';

export interface Lease {
  /** The run number, or null when the store does not outlive the process (numbers would repeat). */
  readonly runNumber: number | null;
  /** Throws ETL_LEASE_LOST unless the lock is still this run's. */
  check(): Promise<void>;
  /** Deletes the lock if it is still this run's. */
  release(): Promise<void>;
}

export interface LeaseOptions {
  readonly attempt: string;
  /** Whether run numbers mean anything across processes (true for ZooKeeper). */
  readonly numberRuns: boolean;
  readonly now?: Date;
}

interface LockData {
  readonly load: string;
  readonly attempt: string;
  readonly runNumber: number | null;
  readonly pid: number;
  readonly host: string;
  readonly acquiredAt: string;
}

export function etlRunsPath(load: string): string {
  return `/etl/runs/${pathSegment('load', load)}`;
}

export async function acquireLease(store: CoordinationStore, load: string, options: LeaseOptions): Promise<Lease> {
  const lockPath = etlLockPath(load);
  await store.ensurePath(etlLocksPath());
  let runNumber: number | null = null;
  if (options.numberRuns) {
    await store.ensurePath(etlRunsPath(load));
    runNumber = await store.set(etlRunsPath(load), Buffer.from(options.attempt));
  }
  const data: LockData = { load, attempt: options.attempt, runNumber, pid: process.pid, host: hostname(), acquiredAt: (options.now ?? new Date()).toISOString() };
  for (let tries = 1; ; tries += 1) {
    try {
      await store.create(lockPath, Buffer.from(JSON.stringify(data)), 'ephemeral');
      break;
    } catch (error) {
      if (!hasCode(error, 'NODE_EXISTS')) throw error;
      const holder = await store.get(lockPath);
      if (holder === undefined && tries < 3) continue; // released meanwhile
      const who = holder === undefined ? 'another run' : describeHolder(holder.data);
      throw etlError('ETL_LOAD_BUSY', `load ${load} is being run by ${who} (lock ${lockPath}); wait for it to finish, or stop it, then run again`, {
        retriable: true,
        details: { load, lockPath },
      });
    }
  }
  let lost = false;
  const unsubscribe = store.onSessionEvent((event) => {
    if (event === 'expired') lost = true;
  });
  const ours = async (): Promise<boolean> => {
    const node = await store.get(lockPath);
    if (node === undefined) return false;
    try {
      return (JSON.parse(node.data.toString('utf8')) as LockData).attempt === options.attempt;
    } catch {
      return false;
    }
  };
  return {
    runNumber,
    async check() {
      if (lost || !(await ours())) {
        throw etlError('ETL_LEASE_LOST', `run ${options.attempt} of load ${load} lost its lease ${lockPath} (its coordination session ended); it stops without committing. Run the load again`, {
          retriable: true,
          details: { load, attempt: options.attempt },
        });
      }
    },
    async release() {
      unsubscribe();
      if (!lost && (await ours().catch(() => false))) await store.delete(lockPath).catch(() => undefined);
    },
  };
}

function describeHolder(data: Buffer): string {
  try {
    const holder = JSON.parse(data.toString('utf8')) as Partial<LockData>;
    return `run ${String(holder.runNumber ?? holder.attempt)} (pid ${String(holder.pid)} on ${String(holder.host)}, since ${String(holder.acquiredAt)})`;
  } catch {
    return 'another run';
  }
}
