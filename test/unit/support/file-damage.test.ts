/** The damage tool of the storage fault runs: what it hits, and which batch it reports as first damaged. */
import { mkdirSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { encodeRecordBatch } from '../../../src/protocol/records.js';
import { batchSpans, damageCandidates, damageDataDir } from '../../support/file-damage.js';
import { seededRandom } from '../../support/seeded-random.js';

/** A data dir with one partition folder: two segments of batches of 3 records, an index pair each, and a checkpoint. */
function dataDir(): { dir: string; active: string; sizes: number[] } {
  const dir = mkdtempSync(join(tmpdir(), 'damage-'));
  const folder = join(dir, 'events-0');
  mkdirSync(folder);
  const batches = Array.from({ length: 5 }, (_, index) =>
    encodeRecordBatch([{ value: Buffer.from(`a${index}`) }, { value: Buffer.from(`b${index}`) }, { value: Buffer.from(`c${index}`) }], { baseOffset: BigInt(30 + index * 3) }),
  );
  writeFileSync(join(folder, '00000000000000000000.log'), encodeRecordBatch([{ value: Buffer.from('old') }]));
  writeFileSync(join(folder, '00000000000000000030.log'), Buffer.concat(batches));
  for (const base of ['00000000000000000000', '00000000000000000030']) {
    writeFileSync(join(folder, `${base}.index`), Buffer.alloc(16, 1));
    writeFileSync(join(folder, `${base}.timeindex`), Buffer.alloc(24, 1));
  }
  writeFileSync(join(dir, 'recovery-point-offset-checkpoint'), '0\n1\nevents 0 45\n');
  return { dir, active: join(folder, '00000000000000000030.log'), sizes: batches.map((batch) => batch.length) };
}

describe('file damage', () => {
  it('lists the active segment for segment damage and every index for index damage', () => {
    const { dir } = dataDir();
    const kinds = damageCandidates(dir).map((candidate) => `${candidate.kind} ${candidate.file}`);
    expect(kinds.filter((kind) => kind.startsWith('segment'))).toEqual(['segment-tail-cut events-0/00000000000000000030.log', 'segment-overwrite events-0/00000000000000000030.log']);
    expect(kinds.filter((kind) => kind.includes('index'))).toHaveLength(4);
    expect(kinds).toContain('checkpoint-overwrite recovery-point-offset-checkpoint');
  });

  it('reports the base offset of the batch holding the first damaged byte', () => {
    for (let seed = 1; seed <= 40; seed += 1) {
      const { dir, active, sizes } = dataDir();
      const before = readFileSync(active);
      const damage = damageDataDir(dir, seededRandom(seed), { kinds: ['segment-overwrite', 'segment-tail-cut'] });
      expect(damage).toBeDefined();
      const starts = sizes.map((_, index) => sizes.slice(0, index).reduce((sum, size) => sum + size, 0));
      const holding = starts.findLastIndex((start) => start <= damage!.at);
      const after = readFileSync(active);
      if (damage!.kind === 'segment-tail-cut') {
        expect(statSync(active).size).toBe(damage!.at);
        // A cut exactly at a batch boundary hits the batch that starts there.
        expect(damage!.firstDamagedOffset).toBe(damage!.at === before.length ? undefined : BigInt(30 + holding * 3));
      } else {
        expect(after.length).toBe(before.length);
        for (let index = damage!.at; index < damage!.at + damage!.length; index += 1) expect(after[index]).not.toBe(before[index]);
        expect(Buffer.compare(after.subarray(0, damage!.at), before.subarray(0, damage!.at))).toBe(0);
        expect(damage!.firstDamagedOffset).toBe(BigInt(30 + holding * 3));
      }
    }
  });

  it('walks whole batches and leaves a torn tail out', () => {
    const { active, sizes } = dataDir();
    const bytes = readFileSync(active);
    expect(batchSpans(bytes).map((span) => span.baseOffset)).toEqual([30n, 33n, 36n, 39n, 42n]);
    expect(batchSpans(bytes.subarray(0, bytes.length - 1)).map((span) => span.size)).toEqual(sizes.slice(0, 4));
  });
});
