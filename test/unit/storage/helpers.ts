/** Shared pieces of the storage tests: temp data dirs, batches, and walking stored bytes. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterEach } from 'vitest';
import { ManualClock } from '../../../src/common/clock.js';
import { createLogger } from '../../../src/common/logger.js';
import { encodeRecordBatch } from '../../../src/protocol/records.js';
import { LogManager } from '../../../src/storage/log-manager.js';
import { logConfigSchema, type LogConfig, type LogConfigOverrides } from '../../../src/storage/log-config.js';

const directories: string[] = [];
afterEach(() => {
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

export function temporaryDirectory(): string {
  const directory = mkdtempSync(join(tmpdir(), 'tributary-storage-'));
  directories.push(directory);
  return directory;
}

/** A logger that keeps its lines, so tests can assert what recovery reported. */
export function memoryLogger(): { logger: ReturnType<typeof createLogger>; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').trim().split('\n')) lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  return { logger: createLogger({ name: 'storage-test', level: 'info', destination }), lines };
}

export function config(overrides: LogConfigOverrides = {}): LogConfig {
  return logConfigSchema.parse(overrides);
}

export async function openManager(dataDir: string, overrides: LogConfigOverrides = {}, clock = new ManualClock()) {
  const { logger, lines } = memoryLogger();
  const manager = await LogManager.open({ dataDir, logger, clock, configFor: () => config(overrides) });
  return { manager, clock, lines };
}

/** A batch of `count` records with values `<tag>-<i>` and the given timestamp. */
export function batch(count: number, { tag = 'r', timestamp = 1_000, valueBytes = 0 }: { tag?: string; timestamp?: number; valueBytes?: number } = {}): Buffer {
  return encodeRecordBatch(
    Array.from({ length: count }, (_, i) => ({
      value: Buffer.concat([Buffer.from(`${tag}-${i}`), Buffer.alloc(valueBytes, 0x61)]),
      timestamp: timestamp + i,
    })),
  );
}

export interface StoredBatch {
  readonly position: number;
  readonly size: number;
  readonly baseOffset: number;
  readonly lastOffset: number;
}

/** The batches laid end to end in `bytes` (stored or fetched bytes). */
export function walkBatches(bytes: Buffer): StoredBatch[] {
  const batches: StoredBatch[] = [];
  let position = 0;
  while (position + 12 <= bytes.length) {
    const size = bytes.readInt32BE(position + 8) + 12;
    const baseOffset = Number(bytes.readBigInt64BE(position));
    batches.push({ position, size, baseOffset, lastOffset: baseOffset + bytes.readInt32BE(position + 23) });
    position += size;
  }
  return batches;
}

import { seededRandom } from '../../support/seeded-random.js';

export { seededRandom };
