/**
 * The data dir's identity and replication checkpoint: `meta.properties` (made once, kept, refused
 * when it names another broker or cannot be read) and `replication-offset-checkpoint` (the high
 * watermarks of replicated logs, read back at start, forgotten with a deleted partition).
 */
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../../src/common/clock.js';
import { TributaryError } from '../../../src/common/errors.js';
import { readCheckpoint } from '../../../src/storage/checkpoint.js';
import { CLEAN_SHUTDOWN_MARKER, HIGH_WATERMARK_CHECKPOINT, LogManager, META_PROPERTIES, type LogManagerOptions } from '../../../src/storage/log-manager.js';
import { batch, config, memoryLogger, temporaryDirectory } from './helpers.js';

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

async function open(dataDir: string, options: Partial<LogManagerOptions> = {}) {
  const { logger, lines } = memoryLogger();
  const manager = await LogManager.open({ dataDir, logger, clock: new ManualClock(), configFor: () => config({ flushMessages: 1_000_000 }), ...options });
  return { manager, lines };
}

async function refusal(promise: Promise<unknown>): Promise<TributaryError> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  if (!(error instanceof TributaryError)) throw new Error(`expected a TributaryError, got ${String(error)}`);
  return error;
}

function properties(dataDir: string): Map<string, string> {
  const text = readFileSync(join(dataDir, META_PROPERTIES), 'utf8');
  return new Map(
    text
      .split('\n')
      .filter((line) => line !== '' && !line.startsWith('#'))
      .map((line) => line.split('=') as [string, string]),
  );
}

describe('meta.properties', () => {
  it('is created in a new data dir with the broker id and a UUID v4 storage id, and kept across restarts', async () => {
    const dataDir = temporaryDirectory();
    const first = await open(dataDir, { brokerId: 3 });
    expect(first.manager.storageId).toMatch(UUID_V4);
    expect(Object.fromEntries(properties(dataDir))).toEqual({ 'version': '1', 'broker.id': '3', 'storage.id': first.manager.storageId });
    await first.manager.close();
    const second = await open(dataDir, { brokerId: 3 });
    expect(second.manager.storageId).toBe(first.manager.storageId);
    await second.manager.close();
  });

  it('refuses the data dir of another broker and touches nothing in it', async () => {
    const dataDir = temporaryDirectory();
    const first = await open(dataDir, { brokerId: 1 });
    await (await first.manager.getOrCreateLog('t', 0)).append(batch(2));
    await first.manager.close();
    const before = readFileSync(join(dataDir, META_PROPERTIES), 'utf8');
    const error = await refusal(open(dataDir, { brokerId: 2 }));
    expect(error.code).toBe('DATA_DIR_OF_ANOTHER_BROKER');
    expect(error.message).toMatch(/belongs to broker 1.*not to this broker 2/);
    expect(existsSync(join(dataDir, CLEAN_SHUTDOWN_MARKER))).toBe(true);
    expect(readFileSync(join(dataDir, META_PROPERTIES), 'utf8')).toBe(before);
  });

  it('records the broker id in a file made without one, keeping the storage id', async () => {
    const dataDir = temporaryDirectory();
    const anonymous = await open(dataDir);
    expect(properties(dataDir).has('broker.id')).toBe(false);
    const storageId = anonymous.manager.storageId;
    await anonymous.manager.close();
    const named = await open(dataDir, { brokerId: 5 });
    expect([named.manager.storageId, properties(dataDir).get('broker.id')]).toEqual([storageId, '5']);
    await named.manager.close();
    // Without a broker id (a tool), any owner is accepted.
    const tool = await open(dataDir);
    expect(tool.manager.storageId).toBe(storageId);
    await tool.manager.close();
  });

  it('is created, with a warning, in a data dir that holds logs from before it existed', async () => {
    const dataDir = temporaryDirectory();
    const old = await open(dataDir);
    await (await old.manager.getOrCreateLog('t', 0)).append(batch(2));
    await old.manager.close();
    rmSync(join(dataDir, META_PROPERTIES));
    const upgraded = await open(dataDir, { brokerId: 1 });
    expect(upgraded.manager.storageId).not.toBe(old.manager.storageId);
    expect(upgraded.lines.some((line) => line.level === 40 && String(line.msg).includes('no meta.properties'))).toBe(true);
    expect(upgraded.manager.getLog('t', 0)?.logEndOffset).toBe(2);
    await upgraded.manager.close();
  });

  const broken: Record<string, string> = {
    'an empty file': '',
    'another version': 'version=0\nbroker.id=1\nstorage.id=0f2b8e0a-9c1e-4a8b-9d2e-3f4a5b6c7d8e\n',
    'a storage id that is not a UUID': 'version=1\nbroker.id=1\nstorage.id=disk-one\n',
    'a broker id that is not a number': 'version=1\nbroker.id=one\nstorage.id=0f2b8e0a-9c1e-4a8b-9d2e-3f4a5b6c7d8e\n',
  };
  for (const [name, text] of Object.entries(broken)) {
    it(`stops the start on ${name} rather than make a new storage id`, async () => {
      const dataDir = temporaryDirectory();
      writeFileSync(join(dataDir, META_PROPERTIES), text);
      const error = await refusal(open(dataDir, { brokerId: 1 }));
      expect(error.code).toBe('META_PROPERTIES_INVALID');
      expect(error.message).toMatch(/new storage id/);
      expect(readFileSync(join(dataDir, META_PROPERTIES), 'utf8')).toBe(text);
    });
  }

  it('stops the start when meta.properties cannot be read', async () => {
    const dataDir = temporaryDirectory();
    // A folder where the file should be: reading it fails with EISDIR.
    mkdirSync(join(dataDir, META_PROPERTIES));
    expect((await refusal(open(dataDir, { brokerId: 1 }))).code).toBe('META_PROPERTIES_INVALID');
  });

  it('reads a file with comments, spaces and properties of other tools', async () => {
    const dataDir = temporaryDirectory();
    writeFileSync(join(dataDir, META_PROPERTIES), '#written by hand\n\nversion = 1\ncluster.id=abc\nbroker.id=4\nstorage.id=0F2B8E0A-9C1E-4A8B-9D2E-3F4A5B6C7D8E\n');
    const { manager } = await open(dataDir, { brokerId: 4 });
    expect(manager.storageId).toBe('0f2b8e0a-9c1e-4a8b-9d2e-3f4a5b6c7d8e');
    await manager.close();
  });
});

describe('replication-offset-checkpoint', () => {
  it('holds the high watermarks of replicated logs, written on demand and at close, and read back at start', async () => {
    const dataDir = temporaryDirectory();
    const first = await open(dataDir);
    const replicated = await first.manager.getOrCreateLog('rep', 0);
    const plain = await first.manager.getOrCreateLog('plain', 0);
    replicated.setHighWatermarkMode('replicated');
    for (const log of [replicated, plain]) {
      await log.append(batch(2));
      await log.append(batch(3));
      await log.flush();
    }
    first.manager.writeHighWatermarkCheckpoint();
    expect(readCheckpoint(join(dataDir, HIGH_WATERMARK_CHECKPOINT))).toEqual(new Map([['rep 0', 0]]));
    replicated.updateHighWatermark(2);
    await first.manager.close();
    expect(readCheckpoint(join(dataDir, HIGH_WATERMARK_CHECKPOINT))).toEqual(new Map([['rep 0', 2]]));

    const second = await open(dataDir);
    expect(second.manager.highWatermarkCheckpoint('rep', 0)).toBe(2);
    expect(second.manager.highWatermarkCheckpoint('plain', 0)).toBeUndefined();
    // Until the replica manager sets the log's mode, its entry is written back as read, not as its flushed end.
    second.manager.writeHighWatermarkCheckpoint();
    expect(readCheckpoint(join(dataDir, HIGH_WATERMARK_CHECKPOINT)).get('rep 0')).toBe(2);
    const log = second.manager.getLog('rep', 0)!;
    log.setHighWatermarkMode('replicated');
    expect(log.resetHighWatermark(second.manager.highWatermarkCheckpoint('rep', 0)!)).toBe(2);
    log.updateHighWatermark(5);
    second.manager.writeHighWatermarkCheckpoint();
    expect(readCheckpoint(join(dataDir, HIGH_WATERMARK_CHECKPOINT)).get('rep 0')).toBe(5);
    await second.manager.close();
  });

  it('is never written for a broker without replicated logs', async () => {
    const dataDir = temporaryDirectory();
    const { manager } = await open(dataDir);
    await (await manager.getOrCreateLog('plain', 0)).append(batch(1));
    manager.writeHighWatermarkCheckpoint();
    await manager.close();
    expect(existsSync(join(dataDir, HIGH_WATERMARK_CHECKPOINT))).toBe(false);
  });

  it('forgets a deleted partition', async () => {
    const dataDir = temporaryDirectory();
    const first = await open(dataDir);
    for (const partition of [0, 1]) {
      const log = await first.manager.getOrCreateLog('gone', partition);
      log.setHighWatermarkMode('replicated');
      await log.append(batch(2));
      log.updateHighWatermark(2);
    }
    await first.manager.close();
    const second = await open(dataDir);
    await second.manager.deleteLog('gone', 1);
    expect(second.manager.highWatermarkCheckpoint('gone', 1)).toBeUndefined();
    expect(readCheckpoint(join(dataDir, HIGH_WATERMARK_CHECKPOINT))).toEqual(new Map([['gone 0', 2]]));
    await second.manager.close();
  });

  it('starts empty, with a warning, from an unreadable checkpoint', async () => {
    const dataDir = temporaryDirectory();
    writeFileSync(join(dataDir, HIGH_WATERMARK_CHECKPOINT), '0\n5\nbroken\n');
    const { manager, lines } = await open(dataDir);
    expect(manager.highWatermarkCheckpoint('any', 0)).toBeUndefined();
    expect(lines.some((line) => line.level === 40 && String(line.msg).includes('high-watermark checkpoint unreadable'))).toBe(true);
    await manager.close();
  });
});
