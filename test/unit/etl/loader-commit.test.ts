/**
 * The commit protocol's decisions (src/etl/load/commit.ts) on an in-memory warehouse: a claim is
 * permanent and fences a stale run, renames count as done only when the file is provably in
 * place, publication is the claim's bytes, any number of runs may roll a claim forward, and only
 * staging of published commits is removed.
 */
import { createHash } from 'node:crypto';
import { beforeEach, describe, expect, it } from 'vitest';
import { TributaryError } from '../../../src/common/errors.js';
import { readCommitLog } from '../../../src/etl/load/commit-log.js';
import { claimCommit, completeCommit, recoverCommits, type CommitContext, type CommitPoint } from '../../../src/etl/load/commit.js';
import { claimPath, publishedPath, stagingDir } from '../../../src/etl/layout.js';
import { MANIFEST_FORMAT, serializeManifest, type Manifest } from '../../../src/etl/load/manifest.js';
import { MemoryWarehouse, quietLogger } from './loader-fakes.js';

const ROOT = 'wh';
const LOAD = 'views';

class Crash extends Error {}

function context(warehouse: MemoryWarehouse, attempt: string, crashAt?: { point: CommitPoint; pass: number }): CommitContext {
  let passes = 0;
  return {
    warehouse,
    root: ROOT,
    load: LOAD,
    attempt,
    logger: quietLogger,
    failpoint: (point) => {
      if (crashAt?.point === point && (passes += 1) === crashAt.pass) throw new Crash(`crash at ${point}`);
    },
  };
}

/** Stages `count` files for commit `seq` of `attempt`, planned from offsets `from`, and returns its manifest. */
async function stagedManifest(warehouse: MemoryWarehouse, seq: number, attempt: string, from: number, count = 3): Promise<Manifest> {
  const staging = stagingDir(ROOT, LOAD, seq, attempt);
  const files = [];
  for (let partition = 0; partition < count; partition += 1) {
    const bytes = Buffer.from(`records of partition ${partition} from ${from} by ${attempt}`);
    const path = `${ROOT}/t/hourly/2026/11/29/15/t+${partition}+${from}+${from + 10}.avro`;
    const staged = `${staging}/data/${path}`;
    await warehouse.create(staged, bytes);
    files.push({ topic: 't', partition, hour: '2026-11-29T15', start: from, end: from + 10, records: 10, bytes: bytes.length, sha256: createHash('sha256').update(bytes).digest('hex'), staged, path });
  }
  return {
    format: MANIFEST_FORMAT,
    load: LOAD,
    seq,
    attempt,
    runNumber: null,
    plannedAt: '2026-11-29T16:00:00.000Z',
    output: { format: 'avro', codec: 'deflate', timeField: null },
    readerSchemas: { t: { subject: 't-value', version: 1, id: 1 } },
    ranges: files.map((file) => ({ topic: 't', partition: file.partition, start: from, end: from + 10, records: 10, quarantined: 0 })),
    nextOffsets: { t: Object.fromEntries(files.map((file) => [String(file.partition), from + 10])) },
    files,
    quarantine: { records: 0, reasons: {}, files: [] },
    hours: { t: { '2026-11-29T15': 10 * count } },
  };
}

async function commit(warehouse: MemoryWarehouse, manifest: Manifest, crashAt?: { point: CommitPoint; pass: number }): Promise<void> {
  const ctx = context(warehouse, manifest.attempt, crashAt);
  const bytes = await claimCommit(ctx, manifest);
  await completeCommit(ctx, manifest, bytes);
}

async function failureOf(promise: Promise<unknown>): Promise<TributaryError> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  if (!(error instanceof TributaryError)) throw new Error(`expected a TributaryError, got ${String(error)}`);
  return error;
}

describe('commit protocol', () => {
  let warehouse: MemoryWarehouse;
  beforeEach(() => {
    warehouse = new MemoryWarehouse();
  });

  it('claims, moves every staged file into place, and publishes the claim bytes while keeping the claim', async () => {
    const manifest = await stagedManifest(warehouse, 1, 'aaa', 0);
    await commit(warehouse, manifest);
    for (const file of manifest.files) {
      expect(warehouse.files.has(file.path)).toBe(true);
      expect(warehouse.files.has(file.staged)).toBe(false);
    }
    const claim = warehouse.files.get(claimPath(ROOT, LOAD, 1));
    expect(claim?.equals(serializeManifest(manifest))).toBe(true);
    expect(warehouse.files.get(publishedPath(ROOT, LOAD, 1))?.equals(claim!)).toBe(true);
    expect(await readCommitLog(warehouse, ROOT, LOAD)).toMatchObject({ claimed: [1], pending: [], lastClaimed: 1, lastPublished: 1 });
  });

  it('stages the publication copy with the claim, so publishing is a rename only, and makes each target folder once before the renames', async () => {
    const manifest = await stagedManifest(warehouse, 1, 'aaa', 0);
    const calls: string[] = [];
    const create = warehouse.create.bind(warehouse);
    const rename = warehouse.rename.bind(warehouse);
    const mkdirs = warehouse.mkdirs.bind(warehouse);
    warehouse.create = async (path, data) => {
      calls.push(`create ${path}`);
      return create(path, data);
    };
    warehouse.rename = async (from, to) => {
      calls.push(`rename ${to}`);
      return rename(from, to);
    };
    warehouse.mkdirs = async (path) => {
      calls.push(`mkdirs ${path}`);
      return mkdirs(path);
    };

    const ctx = context(warehouse, 'aaa');
    const bytes = await claimCommit(ctx, manifest);
    const staging = stagingDir(ROOT, LOAD, 1, 'aaa');
    expect(calls).toEqual([`create ${staging}/manifest.pending`, `create ${staging}/manifest.json`, `rename ${claimPath(ROOT, LOAD, 1)}`]);
    expect(warehouse.files.get(`${staging}/manifest.json`)?.equals(bytes)).toBe(true);

    calls.length = 0;
    await completeCommit(ctx, manifest, bytes);
    const hourFolder = `${ROOT}/t/hourly/2026/11/29/15`;
    expect(calls).toEqual([`mkdirs ${hourFolder}`, ...manifest.files.map((file) => `rename ${file.path}`), `rename ${publishedPath(ROOT, LOAD, 1)}`]);
    expect(warehouse.files.has(`${staging}/manifest.json`)).toBe(false);
    expect(warehouse.files.get(publishedPath(ROOT, LOAD, 1))?.equals(bytes)).toBe(true);
  });

  it('fences a stale run whose claim comes after another run already published the same seq', async () => {
    // Both planned from "nothing committed"; B was paused (lost its lease) before claiming.
    const runA = await stagedManifest(warehouse, 1, 'aaa', 0);
    const staleB = await stagedManifest(warehouse, 1, 'bbb', 0);
    await commit(warehouse, runA);
    const before = new Map(warehouse.files);

    const error = await failureOf(commit(warehouse, staleB));
    expect(error.code).toBe('ETL_COMMIT_FENCED');
    expect(error.message).toContain('commit 1 of load views was claimed by another run');

    // B's two staged copies of its manifest are gone with its claim.
    expect(warehouse.filesUnder(`${stagingDir(ROOT, LOAD, 1, 'bbb')}/manifest`)).toEqual([]);
    // Nothing of B reached the final names or the commit log; A's commit is untouched.
    for (const [path, bytes] of before) if (!path.includes('/staging/')) expect(warehouse.files.get(path)?.equals(bytes), path).toBe(true);
    const finals = warehouse.filesUnder(`${ROOT}/t/`);
    expect(finals).toEqual(runA.files.map((file) => file.path).sort());
    for (const path of finals) expect(warehouse.files.get(path)?.toString()).toContain('by aaa');
    expect(warehouse.filesUnder(`${ROOT}/_etl/${LOAD}/commits/`)).toEqual([claimPath(ROOT, LOAD, 1), publishedPath(ROOT, LOAD, 1)].sort());
  });

  it('fences the stale run also while the other commit is still between claim and publish', async () => {
    const runA = await stagedManifest(warehouse, 1, 'aaa', 0);
    const staleB = await stagedManifest(warehouse, 1, 'bbb', 0);
    await expect(commit(warehouse, runA, { point: 'after-rename', pass: 1 })).rejects.toBeInstanceOf(Crash);
    expect((await failureOf(commit(warehouse, staleB))).code).toBe('ETL_COMMIT_FENCED');
    const recovery = await recoverCommits(context(warehouse, 'ccc'));
    expect(recovery.rolledForward).toEqual([1]);
    for (const path of warehouse.filesUnder(`${ROOT}/t/`)) expect(warehouse.files.get(path)?.toString()).toContain('by aaa');
  });

  for (const crashAt of [
    { point: 'after-claim', pass: 1 },
    { point: 'after-rename', pass: 1 },
    { point: 'after-rename', pass: 2 },
    { point: 'before-publish', pass: 1 },
  ] as const) {
    it(`rolls a commit forward after a crash at ${crashAt.point}:${crashAt.pass}, each file once`, async () => {
      const manifest = await stagedManifest(warehouse, 1, 'aaa', 0);
      await expect(commit(warehouse, manifest, crashAt)).rejects.toBeInstanceOf(Crash);
      expect((await readCommitLog(warehouse, ROOT, LOAD)).pending).toEqual([1]);

      const recovery = await recoverCommits(context(warehouse, 'bbb'));
      expect(recovery.rolledForward).toEqual([1]);
      expect(recovery.log).toMatchObject({ pending: [], lastPublished: 1 });
      expect(warehouse.filesUnder(`${ROOT}/t/`)).toEqual(manifest.files.map((file) => file.path).sort());
      expect(warehouse.files.get(publishedPath(ROOT, LOAD, 1))?.equals(serializeManifest(manifest))).toBe(true);
      // Every rename of a data file happened exactly once across both runs.
      for (const file of manifest.files) expect(warehouse.operations.filter((op) => op === `rename ${file.staged} -> ${file.path}`)).toHaveLength(1);
      expect(warehouse.filesUnder(`${ROOT}/_etl/${LOAD}/staging/`)).toEqual([]);
    });
  }

  it('lets two runs roll the same claim forward at once', async () => {
    const manifest = await stagedManifest(warehouse, 1, 'aaa', 0, 6);
    await expect(commit(warehouse, manifest, { point: 'after-claim', pass: 1 })).rejects.toBeInstanceOf(Crash);
    const [first, second] = await Promise.all([recoverCommits(context(warehouse, 'bbb')), recoverCommits(context(warehouse, 'ccc'))]);
    expect([first.rolledForward, second.rolledForward]).toEqual([[1], [1]]);
    expect(warehouse.filesUnder(`${ROOT}/t/`)).toEqual(manifest.files.map((file) => file.path).sort());
    expect(warehouse.files.get(publishedPath(ROOT, LOAD, 1))?.equals(serializeManifest(manifest))).toBe(true);
  });

  it('refuses to roll forward when a staged file is gone and its final file is missing', async () => {
    const manifest = await stagedManifest(warehouse, 1, 'aaa', 0);
    await expect(commit(warehouse, manifest, { point: 'after-claim', pass: 1 })).rejects.toBeInstanceOf(Crash);
    const lost = manifest.files[1]!;
    await warehouse.delete(lost.staged);
    const error = await failureOf(recoverCommits(context(warehouse, 'bbb')));
    expect(error.code).toBe('ETL_WAREHOUSE_DAMAGED');
    expect(error.message).toContain(`the staged file is gone and the final file does not exist`);
    expect(error.message).toContain(lost.path);
    expect(warehouse.files.has(publishedPath(ROOT, LOAD, 1))).toBe(false);
  });

  it('refuses a final name taken by another file instead of overwriting it', async () => {
    const manifest = await stagedManifest(warehouse, 1, 'aaa', 0);
    const taken = manifest.files[0]!;
    await warehouse.create(taken.path, Buffer.from('someone else'));
    const error = await failureOf(commit(warehouse, manifest));
    expect(error.code).toBe('ETL_WAREHOUSE_DAMAGED');
    expect(error.message).toContain('the final name is taken by another file');
    expect(warehouse.files.get(taken.path)?.toString()).toBe('someone else');
    expect(warehouse.files.has(publishedPath(ROOT, LOAD, 1))).toBe(false);
  });

  it('removes staging of published seqs only: a folder of the next, unclaimed seq may be a live run', async () => {
    const first = await stagedManifest(warehouse, 1, 'aaa', 0);
    await stagedManifest(warehouse, 1, 'crashed', 0); // an earlier attempt at seq 1 that died
    await commit(warehouse, first);
    const live = await stagedManifest(warehouse, 2, 'live', 10);
    const recovery = await recoverCommits(context(warehouse, 'bbb'));
    expect([...recovery.stagingRemoved].sort()).toEqual([stagingDir(ROOT, LOAD, 1, 'aaa'), stagingDir(ROOT, LOAD, 1, 'crashed')].sort());
    for (const file of live.files) expect(warehouse.files.has(file.staged)).toBe(true);
  });

  it('says the commit log was edited when a publication has no claim', async () => {
    await commit(warehouse, await stagedManifest(warehouse, 1, 'aaa', 0));
    await warehouse.delete(claimPath(ROOT, LOAD, 1));
    const error = await failureOf(readCommitLog(warehouse, ROOT, LOAD));
    expect(error.code).toBe('ETL_WAREHOUSE_DAMAGED');
    expect(error.message).toContain('claims are never deleted');
  });

  it('refuses a publication whose bytes differ from its claim', async () => {
    const manifest = await stagedManifest(warehouse, 1, 'aaa', 0);
    await expect(commit(warehouse, manifest, { point: 'before-publish', pass: 1 })).rejects.toBeInstanceOf(Crash);
    await warehouse.create(publishedPath(ROOT, LOAD, 1), Buffer.from('{"edited": true}'));
    const error = await failureOf(completeCommit(context(warehouse, 'bbb'), manifest, serializeManifest(manifest)));
    expect(error.code).toBe('ETL_WAREHOUSE_DAMAGED');
    expect(error.message).toContain('does not hold the bytes of its claim');
  });
});
