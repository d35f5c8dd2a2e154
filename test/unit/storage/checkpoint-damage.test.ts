/**
 * Found by the storage fault runs' damage model (issue #22): a checkpoint is trusted at start, so
 * a damaged digit in `log-start-offset-checkpoint` used to move a partition's log start forward
 * and delete every segment below it (acknowledged records gone), and one in
 * `recovery-point-offset-checkpoint` used to skip the check of unflushed segments. Checkpoints
 * now carry a CRC-32C; a damaged one is ignored as a malformed one is (full recovery, the log
 * start from the segments).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readCheckpoint, writeCheckpoint } from '../../../src/storage/checkpoint.js';
import { LOG_START_CHECKPOINT, RECOVERY_POINT_CHECKPOINT } from '../../../src/storage/log-manager.js';
import { batch, openManager, temporaryDirectory } from './helpers.js';

describe('damaged checkpoints', () => {
  it('a changed digit in the log-start checkpoint deletes nothing', async () => {
    const directory = temporaryDirectory();
    const { manager } = await openManager(directory, { segmentBytes: 1024 });
    const log = await manager.getOrCreateLog('kept', 0);
    for (let index = 0; index < 40; index += 1) await log.append(batch(5, { tag: `b${index}`, valueBytes: 20 }), { waitForFlush: true });
    expect(log.logEndOffset).toBe(200);
    await manager.close();

    const path = join(directory, LOG_START_CHECKPOINT);
    const text = readFileSync(path, 'utf8');
    expect(text).toMatch(/^kept 0 0$/m);
    writeFileSync(path, text.replace(/^kept 0 0$/m, 'kept 0 8')); // "0" → "8": one damaged byte
    const again = await openManager(directory, { segmentBytes: 1024 });
    const reopened = again.manager.getLog('kept', 0);
    expect(reopened?.logStartOffset).toBe(0);
    expect(reopened?.logEndOffset).toBe(200);
    expect(again.lines.some((line) => String(line['msg']).includes('checkpoint'))).toBe(true);
    await again.manager.close();
  });

  it('reads what it wrote, refuses any changed byte, and still reads the checksum-less files of earlier versions', () => {
    const directory = temporaryDirectory();
    const path = join(directory, RECOVERY_POINT_CHECKPOINT);
    const entries = new Map([['a 0', 10], ['b 3', 12345]]);
    writeCheckpoint(path, entries);
    expect(readCheckpoint(path)).toEqual(entries);
    const bytes = readFileSync(path);
    for (let index = 0; index < bytes.length; index += 1) {
      const damaged = Buffer.from(bytes);
      damaged[index] = (damaged[index] ?? 0) ^ 0x01;
      writeFileSync(path, damaged);
      expect(() => readCheckpoint(path), `byte ${index} changed`).toThrow(/malformed|checksum/);
    }
    writeFileSync(path, '0\n2\na 0 10\nb 3 12345\n');
    expect(readCheckpoint(path)).toEqual(entries);
  });
});
