/**
 * `npm run chaos -- compaction [--rounds N] [--seed N]` (300 rounds by default; a short version
 * runs in `npm test`): a process writing keyed records and tombstones to a compacted partition and
 * cleaning it over and over (test/support/cleaner-crash-worker.ts) is SIGKILLed after a random
 * number of acknowledged appends — wherever it is then: inside a pass, between the renames of a
 * swap, between a write and its fsync. After each kill the data dir is opened here (recovery runs)
 * and read from the log start:
 *
 *   - opening never fails and the partition is not offline;
 *   - every record read was written (its key and unique value were tried) and, when it was
 *     acknowledged, sits at its acknowledged offset; offsets rise;
 *   - for each key, the newest record read is at or after its latest acknowledged write (the same
 *     value when at it): a key's latest acknowledged value is never lost to cleaning; only a
 *     tombstone may be gone, and then no older value of its key is left;
 *   - a reader from the log start ends at the log end.
 *
 * Then the worker starts again on the same data dir.
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { Writable } from 'node:stream';
import { createLogger } from '../../src/common/logger.js';
import { decodeRecords } from '../../src/protocol/records.js';
import { LogManager } from '../../src/storage/log-manager.js';
import { logConfigSchema } from '../../src/storage/log-config.js';
import type { ServiceRun } from '../services/run-dir.js';
import { CRASH_CLEANER, CRASH_LOG_CONFIG, CRASH_TOPIC } from '../support/cleaner-crash-settings.js';
import { startLineProcess } from '../support/line-process.js';
import type { ChaosSuite } from './run.js';

const root = fileURLToPath(new URL('../..', import.meta.url));

export interface CleanerCrashOptions {
  readonly run: ServiceRun;
  readonly rounds: number;
  readonly seed: number;
  readonly say: (line: string) => void;
}

export interface CleanerCrashResult {
  readonly violations: string[];
  readonly kills: number;
  readonly acknowledged: number;
  /** Rounds whose recovery finished or rolled back a cleaner swap (the kill landed inside one). */
  readonly swapsRecovered: number;
  /** Records the cleaner had removed by the last round. */
  readonly removed: number;
}

interface Written {
  readonly offset: number;
  readonly key: string;
  readonly value: string | null;
}

async function readAll(dataDir: string): Promise<{ records: Written[]; end: number; logEnd: number; offline: number; swaps: number }> {
  const lines: Record<string, unknown>[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').trim().split('\n')) if (line !== '') lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  const logger = createLogger({ name: 'cleaner-crash-check', level: 'info', destination });
  const manager = await LogManager.open({ dataDir, logger, configFor: () => logConfigSchema.parse(CRASH_LOG_CONFIG), cleaner: { ...CRASH_CLEANER, enable: false } });
  try {
    const offline = manager.offlineLogs().length;
    const log = manager.getLog(CRASH_TOPIC, 0);
    if (log === undefined) return { records: [], end: 0, logEnd: 0, offline, swaps: 0 };
    const records: Written[] = [];
    let offset = log.logStartOffset;
    for (;;) {
      const { slice } = await log.read(offset, 64 * 1024);
      if (slice === undefined) break;
      const bytes = await slice.readBytes();
      slice.release();
      let position = 0;
      while (position + 61 <= bytes.length) {
        const size = bytes.readInt32BE(position + 8) + 12;
        for (const record of decodeRecords(bytes, position)) {
          records.push({ offset: Number(record.offset), key: record.key?.toString() ?? '', value: record.value?.toString() ?? null });
        }
        offset = Number(bytes.readBigInt64BE(position)) + bytes.readInt32BE(position + 23) + 1;
        position += size;
      }
    }
    const swaps = lines.filter((line) => String(line['msg']).includes('cleaner swap')).length;
    return { records, end: offset, logEnd: log.logEndOffset, offline, swaps };
  } finally {
    await manager.close();
  }
}

export async function runCleanerCrashRounds(options: CleanerCrashOptions): Promise<CleanerCrashResult> {
  const dataDir = mkdtempSync(join(tmpdir(), 'tributary-cleaner-crash-'));
  const violations: string[] = [];
  const tried = new Set<string>();
  const ackedAt = new Map<string, Written>();
  const latestAcked = new Map<string, Written>();
  // Keys with a tombstone tried after their latest acknowledged write and never acknowledged: the
  // kill came between its fsync and its ack, so it may be in the log, and the cleaner may then
  // rightly remove the key altogether.
  const unackedTombstone = new Set<string>();
  let random = options.seed;
  const next = (): number => {
    random = (random * 1_103_515_245 + 12_345) % 2_147_483_648;
    return random / 2_147_483_648;
  };
  let kills = 0;
  let swapsRecovered = 0;
  let removed = 0;
  try {
    for (let round = 0; round < options.rounds; round += 1) {
      const worker = startLineProcess({
        run: options.run,
        name: `cleaner-crash-${options.seed}-${round}`,
        command: process.execPath,
        args: ['--import', 'tsx', join(root, 'test', 'support', 'cleaner-crash-worker.ts'), dataDir, String(options.seed * 1000 + round)],
        cwd: root,
      });
      const killAfter = 3 + Math.floor(next() * 40);
      const acks = (): number => worker.lines.filter((line) => line.startsWith('ack ')).length;
      await worker.waitFor(() => acks() >= killAfter, `${killAfter} acknowledged appends`, 120_000);
      await worker.kill();
      kills += 1;
      for (const line of worker.lines) {
        const [kind, first, second, third] = line.split(' ');
        if (kind === 'try' && first !== undefined && second !== undefined) {
          tried.add(`${first} ${second}`);
          if (second === '-') unackedTombstone.add(first);
        }
        if (kind === 'ack' && first !== undefined && second !== undefined && third !== undefined) {
          const written = { offset: Number(first), key: second, value: third === '-' ? null : third };
          unackedTombstone.delete(second);
          if (written.value !== null) ackedAt.set(written.value, written);
          if ((latestAcked.get(written.key)?.offset ?? -1) < written.offset) latestAcked.set(written.key, written);
        }
      }

      // The dir as the kill left it, kept with a failed run's evidence.
      rmSync(`${dataDir}.killed`, { recursive: true, force: true });
      cpSync(dataDir, `${dataDir}.killed`, { recursive: true });
      let state: Awaited<ReturnType<typeof readAll>>;
      try {
        state = await readAll(dataDir);
      } catch (error) {
        violations.push(`round ${round}: the data dir did not open after the kill: ${error instanceof Error ? error.message : String(error)}`);
        break;
      }
      const fail = (problem: string): void => void violations.push(`round ${round} (killed after ${killAfter} acks): ${problem}`);
      if (state.offline > 0) fail('the partition is offline after recovery');
      if (state.swaps > 0) swapsRecovered += 1;
      if (state.end < state.logEnd) fail(`a reader from the log start stopped at ${state.end}, before the log end ${state.logEnd}`);
      const newest = new Map<string, Written>();
      for (const [index, record] of state.records.entries()) {
        if (index > 0 && record.offset <= (state.records[index - 1]?.offset ?? -1)) fail(`offset ${record.offset} does not rise after ${state.records[index - 1]?.offset}`);
        if (!tried.has(`${record.key} ${record.value ?? '-'}`)) fail(`offset ${record.offset} holds ${record.key}=${record.value}, which was never written`);
        const acked = record.value === null ? undefined : ackedAt.get(record.value);
        if (acked !== undefined && acked.offset !== record.offset) fail(`${record.key}=${record.value} was acknowledged at ${acked.offset} but read at ${record.offset}`);
        newest.set(record.key, record);
      }
      for (const [key, acked] of latestAcked) {
        const found = newest.get(key);
        if (found === undefined || found.offset < acked.offset) {
          if (acked.value !== null && !unackedTombstone.has(key)) fail(`key ${key}: its latest acknowledged value ${acked.value} at ${acked.offset} is gone (newest read: ${found === undefined ? 'none' : `${found.value} at ${found.offset}`})`);
          else if (found !== undefined) fail(`key ${key}: its tombstone at ${acked.offset} is gone but an older value ${found.value} at ${found.offset} is back`);
        } else if (found.offset === acked.offset && found.value !== acked.value) {
          fail(`key ${key}: offset ${acked.offset} holds ${found.value}, acknowledged as ${acked.value}`);
        }
      }
      removed = state.logEnd - state.records.length;
      options.say(`round ${round}: killed after ${killAfter} acks; ${state.records.length} records kept of ${state.logEnd} offsets${state.swaps > 0 ? '; recovery finished a cleaner swap' : ''}`);
      if (violations.length > 0) break;
    }
  } finally {
    // A failed run keeps its data dir as evidence, named in the first violation.
    if (violations.length === 0) {
      rmSync(dataDir, { recursive: true, force: true });
      rmSync(`${dataDir}.killed`, { recursive: true, force: true });
    } else {
      violations.unshift(`data dir kept: ${dataDir} (as the last kill left it: ${dataDir}.killed)`);
    }
  }
  return { violations, kills, acknowledged: ackedAt.size, swapsRecovered, removed };
}

/** The chaos suite: `--rounds N` (300), `--seed N`. */
export const runCompactionChaos: ChaosSuite = async (args, context) => {
  const option = (name: string, fallback: number): number => {
    const at = args.indexOf(`--${name}`);
    return at >= 0 ? Number(args[at + 1]) : fallback;
  };
  const result = await runCleanerCrashRounds({ run: context.run, rounds: option('rounds', 300), seed: option('seed', Date.now() % 100_000), say: context.say });
  context.say(`${result.kills} kills, ${result.acknowledged} acknowledged values, ${result.swapsRecovered} recoveries finished a swap, ${result.violations.length} violations`);
  for (const violation of result.violations) context.say(`VIOLATION ${violation}`);
  return result.violations.length === 0;
};
