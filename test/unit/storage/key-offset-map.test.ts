/** The cleaner's key map: digests are MD5 (as Kafka's SkimpyOffsetMap), and the map keeps the latest offset per key. */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { KeyOffsetMap } from '../../../src/storage/cleaner/key-offset-map.js';
import { seededRandom } from './helpers.js';

describe('KeyOffsetMap', () => {
  it('digests keys of every length as MD5, each digest its own bytes', () => {
    const random = seededRandom(7);
    const digests: { key: Buffer; digest: Uint8Array }[] = [];
    for (const length of [0, 1, 15, 55, 56, 63, 64, 65, 1000, 100_000]) {
      const key = Buffer.from(Array.from({ length }, () => Math.floor(random() * 256)));
      digests.push({ key, digest: KeyOffsetMap.digest(key) });
    }
    // Checked after all were taken: a later digest must not overwrite an earlier one.
    for (const { key, digest } of digests) expect(Buffer.from(digest).toString('hex'), `key of ${key.length} bytes`).toBe(createHash('md5').update(key).digest('hex'));
  });

  it('keeps the latest offset of each key as it grows past its first table', () => {
    const map = new KeyOffsetMap(1 << 16, 0.9);
    for (let offset = 0; offset < 20_000; offset += 1) map.put(KeyOffsetMap.digest(Buffer.from(`key-${offset % 9_000}`)), offset);
    expect(map.size).toBe(9_000);
    expect(map.get(KeyOffsetMap.digest(Buffer.from('key-17')))).toBe(18_017);
    expect(map.get(KeyOffsetMap.digest(Buffer.from('key-8999')))).toBe(17_999);
    expect(map.get(KeyOffsetMap.digest(Buffer.from('absent')))).toBe(-1);
  });
});
