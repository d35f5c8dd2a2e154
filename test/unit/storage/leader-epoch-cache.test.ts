/**
 * The leader-epoch cache (KIP-101/279): assignment rules, Kafka's endOffsetFor lookup,
 * truncation from either end, the checkpoint file's format, and loads of damaged files.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { TributaryError } from '../../../src/common/errors.js';
import { LEADER_EPOCH_CHECKPOINT, LeaderEpochCache, UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET } from '../../../src/storage/leader-epoch-cache.js';
import { memoryLogger, temporaryDirectory } from './helpers.js';

function fresh(entries: readonly [number, number][] = []): { cache: LeaderEpochCache; directory: string; lines: Record<string, unknown>[] } {
  const directory = temporaryDirectory();
  const { logger, lines } = memoryLogger();
  const cache = LeaderEpochCache.load(directory, logger);
  for (const [epoch, start] of entries) cache.assign(epoch, start);
  return { cache, directory, lines };
}

const pairs = (cache: LeaderEpochCache): [number, number][] => cache.entries().map((entry) => [entry.epoch, entry.startOffset]);
const fileOf = (directory: string): string => readFileSync(join(directory, LEADER_EPOCH_CHECKPOINT), 'utf8');
const warnings = (lines: Record<string, unknown>[]): string[] => lines.filter((line) => line.level === 40).map((line) => String(line.msg));

describe('assign', () => {
  it('adds newer epochs and writes them in Kafka text format', () => {
    const { cache, directory } = fresh();
    expect(cache.latestEpoch()).toBe(UNDEFINED_EPOCH);
    expect(cache.assign(0, 0)).toBe(true);
    expect(cache.assign(2, 10)).toBe(true);
    expect(cache.assign(5, 10)).toBe(true);
    // Epoch 2 never wrote a batch: epoch 5 starting at the same offset replaces it.
    expect(pairs(cache)).toEqual([[0, 0], [5, 10]]);
    expect(cache.latestEpoch()).toBe(5);
    expect(fileOf(directory)).toBe('0\n2\n0 0\n5 10\n');
  });

  it('removes entries starting at or after the new start, keeping the cache monotonic', () => {
    const { cache } = fresh([[1, 0], [3, 10], [4, 20]]);
    expect(cache.assign(7, 15)).toBe(true);
    expect(pairs(cache)).toEqual([[1, 0], [3, 10], [7, 15]]);
    expect(cache.assign(8, 0)).toBe(true);
    expect(pairs(cache)).toEqual([[8, 0]]);
  });

  it('ignores the latest epoch again (warning when its start differs) and older epochs, writing nothing', () => {
    const { cache, directory, lines } = fresh([[1, 0], [3, 10]]);
    const before = fileOf(directory);
    expect(cache.assign(3, 10)).toBe(false);
    expect(warnings(lines)).toEqual([]);
    expect(cache.assign(3, 12)).toBe(false);
    expect(cache.assign(2, 30)).toBe(false);
    expect(warnings(lines)).toHaveLength(2);
    expect(pairs(cache)).toEqual([[1, 0], [3, 10]]);
    expect(fileOf(directory)).toBe(before);
  });

  it('refuses negative epochs and offsets', () => {
    const { cache } = fresh();
    expect(() => cache.assign(-1, 0)).toThrow(TributaryError);
    expect(() => cache.assign(0, -5)).toThrow(expect.objectContaining({ code: 'LEADER_EPOCH_INVALID' }));
    expect(cache.entries()).toEqual([]);
  });

  it('leaves the cache unchanged when the file cannot be written', () => {
    const directory = join(temporaryDirectory(), 'missing-folder');
    const { logger } = memoryLogger();
    const cache = LeaderEpochCache.load(directory, logger);
    expect(() => cache.assign(1, 0)).toThrow(expect.objectContaining({ code: 'LEADER_EPOCH_CHECKPOINT_FAILED' }));
    expect(cache.entries()).toEqual([]);
  });
});

describe('endOffsetFor (KafkaLeaderEpochFileCache.endOffsetFor)', () => {
  const entries: [number, number][] = [[2, 10], [4, 30], [7, 50]];

  it('answers undefined for an undefined epoch and for an empty cache', () => {
    expect(fresh(entries).cache.endOffsetFor(UNDEFINED_EPOCH, 80)).toEqual({ epoch: UNDEFINED_EPOCH, endOffset: UNDEFINED_EPOCH_OFFSET });
    expect(fresh().cache.endOffsetFor(3, 80)).toEqual({ epoch: UNDEFINED_EPOCH, endOffset: UNDEFINED_EPOCH_OFFSET });
  });

  it('answers the log end for the latest epoch', () => {
    expect(fresh(entries).cache.endOffsetFor(7, 80)).toEqual({ epoch: 7, endOffset: 80 });
  });

  it('answers an epoch newer than the latest with undefined', () => {
    expect(fresh(entries).cache.endOffsetFor(9, 80)).toEqual({ epoch: UNDEFINED_EPOCH, endOffset: UNDEFINED_EPOCH_OFFSET });
  });

  it('answers a known epoch with the start of the next one', () => {
    const { cache } = fresh(entries);
    expect(cache.endOffsetFor(2, 80)).toEqual({ epoch: 2, endOffset: 30 });
    expect(cache.endOffsetFor(4, 80)).toEqual({ epoch: 4, endOffset: 50 });
  });

  it('answers an unknown epoch between two with the floor epoch and the start of the higher', () => {
    const { cache } = fresh(entries);
    expect(cache.endOffsetFor(3, 80)).toEqual({ epoch: 2, endOffset: 30 });
    expect(cache.endOffsetFor(6, 80)).toEqual({ epoch: 4, endOffset: 50 });
  });

  it('answers an epoch older than every entry with itself and the first entry’s start', () => {
    expect(fresh(entries).cache.endOffsetFor(1, 80)).toEqual({ epoch: 1, endOffset: 10 });
    expect(fresh(entries).cache.endOffsetFor(0, 80)).toEqual({ epoch: 0, endOffset: 10 });
  });
});

describe('truncation', () => {
  it('truncateFromEnd removes the epochs starting at or after the new end', () => {
    const { cache, directory } = fresh([[1, 0], [3, 10], [4, 20]]);
    cache.truncateFromEnd(25);
    expect(pairs(cache)).toEqual([[1, 0], [3, 10], [4, 20]]);
    cache.truncateFromEnd(20);
    expect(pairs(cache)).toEqual([[1, 0], [3, 10]]);
    cache.truncateFromEnd(5);
    expect(pairs(cache)).toEqual([[1, 0]]);
    expect(fileOf(directory)).toBe('0\n1\n1 0\n');
    cache.truncateFromEnd(0);
    expect(pairs(cache)).toEqual([]);
    expect(fileOf(directory)).toBe('0\n0\n');
  });

  it('truncateFromStart keeps the last epoch before the new start, moved to it', () => {
    const { cache, directory } = fresh([[1, 0], [3, 10], [4, 20]]);
    cache.truncateFromStart(0);
    expect(pairs(cache)).toEqual([[1, 0], [3, 10], [4, 20]]);
    cache.truncateFromStart(15);
    expect(pairs(cache)).toEqual([[3, 15], [4, 20]]);
    cache.truncateFromStart(20);
    expect(pairs(cache)).toEqual([[4, 20]]);
    cache.truncateFromStart(100);
    expect(pairs(cache)).toEqual([[4, 100]]);
    expect(fileOf(directory)).toBe('0\n1\n4 100\n');
  });

  it('truncateFromStart before every entry changes nothing', () => {
    const { cache } = fresh([[3, 10]]);
    cache.truncateFromStart(5);
    expect(pairs(cache)).toEqual([[3, 10]]);
  });

  it('clear empties the cache and deletes the file', () => {
    const { cache, directory } = fresh([[1, 0], [3, 10]]);
    cache.clear();
    expect(cache.entries()).toEqual([]);
    expect(cache.latestEpoch()).toBe(UNDEFINED_EPOCH);
    expect(existsSync(join(directory, LEADER_EPOCH_CHECKPOINT))).toBe(false);
    cache.clear();
    expect(cache.assign(2, 5)).toBe(true);
  });
});

describe('load', () => {
  it('starts empty without a file and writes none until an epoch is assigned', () => {
    const { cache, directory } = fresh();
    cache.truncateFromEnd(0);
    cache.truncateFromStart(10);
    expect(existsSync(join(directory, LEADER_EPOCH_CHECKPOINT))).toBe(false);
  });

  it('reads back what was written', () => {
    const { directory } = fresh([[1, 0], [3, 10], [9, 12]]);
    const { logger } = memoryLogger();
    const reloaded = LeaderEpochCache.load(directory, logger);
    expect(pairs(reloaded)).toEqual([[1, 0], [3, 10], [9, 12]]);
    expect(reloaded.endOffsetFor(3, 99)).toEqual({ epoch: 3, endOffset: 12 });
  });

  const corrupt: Record<string, string> = {
    'another version': '1\n1\n0 0\n',
    'a count that lies': '0\n3\n0 0\n1 5\n',
    'a bad line': '0\n2\n0 0\n1 five\n',
    'garbage': '\u0000\u0001\u0002',
    'an empty file': '',
    'a negative epoch': '0\n1\n-1 0\n',
  };
  for (const [name, text] of Object.entries(corrupt)) {
    it(`starts empty from ${name}, warns, and rewrites the file on the next change`, () => {
      const directory = temporaryDirectory();
      writeFileSync(join(directory, LEADER_EPOCH_CHECKPOINT), text);
      const { logger, lines } = memoryLogger();
      const cache = LeaderEpochCache.load(directory, logger);
      expect(cache.entries()).toEqual([]);
      expect(warnings(lines)).toHaveLength(1);
      cache.assign(4, 7);
      expect(fileOf(directory)).toBe('0\n1\n4 7\n');
    });
  }

  it('drops entries that break the order, with a warning for each', () => {
    const directory = temporaryDirectory();
    mkdirSync(directory, { recursive: true });
    writeFileSync(join(directory, LEADER_EPOCH_CHECKPOINT), '0\n6\n1 0\n3 10\n2 20\n3 30\n5 5\n6 10\n');
    const { logger, lines } = memoryLogger();
    const cache = LeaderEpochCache.load(directory, logger);
    expect(pairs(cache)).toEqual([[1, 0], [3, 10], [6, 10]]);
    expect(warnings(lines)).toHaveLength(3);
  });
});
