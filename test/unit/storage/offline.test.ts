/**
 * Recovery never refuses to start over one partition: damaged index files are rebuilt from the
 * segment data, and a log that still cannot be opened is recorded offline with its reason while
 * every other log is served; its topic can still be deleted, and its checkpoint entries survive.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { KafkaProtocolError } from '../../../src/protocol/kafka-errors.js';
import { CLEAN_SHUTDOWN_MARKER, RECOVERY_POINT_CHECKPOINT } from '../../../src/storage/log-manager.js';
import { segmentFileName } from '../../../src/storage/segment.js';
import { batch, openManager, temporaryDirectory } from './helpers.js';

const SETTINGS = { indexIntervalBytes: 64, flushMessages: 1_000_000 };

describe('damaged index files', () => {
  const damages: Record<string, (bytes: Buffer) => Buffer> = {
    'garbage': (bytes) => Buffer.alloc(bytes.length, 0xff),
    'torn': (bytes) => bytes.subarray(0, bytes.length - 5),
    'decreasing-timestamps': (bytes) => {
      const copy = Buffer.from(bytes);
      copy.writeBigInt64BE(2n ** 63n - 1n, 0);
      return copy;
    },
  };
  for (const [name, damage] of Object.entries(damages)) {
    for (const file of ['.timeindex', '.index'] as const) {
      it(`rebuilds a ${name} ${file} after a clean stop and answers lookups from the data`, async () => {
        const directory = temporaryDirectory();
        const first = await openManager(directory, SETTINGS);
        const log = await first.manager.getOrCreateLog('idx', 0);
        for (let i = 0; i < 30; i += 1) await log.append(batch(2, { tag: `b${i}`, timestamp: 10_000 + i * 100 }));
        await first.manager.close();
        const path = join(directory, 'idx-0', segmentFileName(0, file));
        writeFileSync(path, damage(readFileSync(path)));

        const { manager, lines } = await openManager(directory, SETTINGS);
        const reopened = manager.getLog('idx', 0)!;
        expect(manager.offlineLogs()).toEqual([]);
        expect(lines.some((line) => String(line.msg).includes('rebuilding'))).toBe(true);
        expect(await reopened.offsetForTimestamp(10_000n + 17n * 100n)).toEqual({ offset: 34, timestamp: 11_700n });
        const { slice } = await reopened.read(41, 1);
        expect(slice?.firstBatchOffset).toBe(40);
        slice?.release();
        await manager.close();
      });
    }
  }
});

describe('a log that cannot be opened', () => {
  it('is offline with its reason while the others serve; its requests get KAFKA_STORAGE_ERROR; its topic can be deleted', async () => {
    const directory = temporaryDirectory();
    const first = await openManager(directory, SETTINGS);
    await (await first.manager.getOrCreateLog('good', 0)).append(batch(3, { tag: 'good' }));
    await (await first.manager.getOrCreateLog('bad', 0)).append(batch(2, { tag: 'bad' }));
    await first.manager.close();
    // A folder where the second segment file should be: opening it fails (EISDIR), whatever the checks.
    mkdirSync(join(directory, 'bad-0', segmentFileName(2, '.log')));

    let goodEnd = 3;
    for (const shutdown of ['clean', 'unclean'] as const) {
      if (shutdown === 'clean') writeFileSync(join(directory, CLEAN_SHUTDOWN_MARKER), '');
      const { manager, lines } = await openManager(directory, SETTINGS);
      expect(manager.offlineLogs().map((log) => `${log.topic}-${log.partition}`)).toEqual(['bad-0']);
      const reason = manager.offlineReason('bad', 0);
      expect(reason).toMatch(/EISDIR/);
      const logged = lines.find((line) => line.level === 50 && line.topic === 'bad');
      expect(logged?.reason).toBe(reason);
      // Every other partition is served.
      const good = manager.getLog('good', 0)!;
      expect(good.logEndOffset).toBe(goodEnd);
      expect((await good.append(batch(1), { waitForFlush: true })).baseOffset).toBe(goodEnd);
      goodEnd += 1;
      // Asking for the offline one again does not reopen or recreate it.
      const refused = await manager.getOrCreateLog('bad', 0).catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(KafkaProtocolError);
      expect((refused as KafkaProtocolError).code).toBe('KAFKA_STORAGE_ERROR');
      expect((refused as KafkaProtocolError).message).toContain('EISDIR');
      // Its checkpoint entry is kept for the start after a repair.
      manager.writeRecoveryCheckpoint();
      expect(readFileSync(join(directory, RECOVERY_POINT_CHECKPOINT), 'utf8')).toMatch(/^bad 0 2$/m);
      if (shutdown === 'clean') {
        await manager.close();
        continue;
      }
      await manager.deleteLog('bad', 0);
      expect(manager.offlineLogs()).toEqual([]);
      expect(existsSync(join(directory, 'bad-0'))).toBe(false);
      await manager.close();
    }
    const last = await openManager(directory, SETTINGS);
    expect(last.manager.offlineLogs()).toEqual([]);
    expect(last.manager.getLog('good', 0)?.logEndOffset).toBe(goodEnd);
    await last.manager.close();
  });
});
