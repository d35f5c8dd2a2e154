/** The mirror origin header: a compact value that round-trips, and values it cannot read are left unread. */
import { describe, expect, it } from 'vitest';
import { ORIGIN_HEADER } from '../../../src/audit/origin.js';
import { decodeMirrorOrigin, encodeMirrorOrigin, MIRROR_ORIGIN_HEADER, mirrorOriginOf, withMirrorOrigin } from '../../../src/mirror/origin-header.js';

describe('the mirror origin header', () => {
  it('round-trips source, partition and offset, small and at the limits', () => {
    for (const origin of [
      { source: 'dc1', partition: 0, offset: 0n },
      { source: 'dc-2.eu_west', partition: 127, offset: 128n },
      { source: 'x'.repeat(64), partition: 2 ** 31 - 1, offset: 2n ** 63n - 1n },
    ]) {
      expect(decodeMirrorOrigin(encodeMirrorOrigin(origin))).toEqual(origin);
    }
  });

  it('carries the gap before a record of a compacted source, and writes a record without one as before (version 1)', () => {
    for (const origin of [
      { source: 'dc1', partition: 0, offset: 5n, from: 0n },
      { source: 'dc1', partition: 4, offset: 1_000_000n, from: 999_999n },
      { source: 'dc1', partition: 4, offset: 2n ** 63n - 1n, from: 7n },
    ]) {
      expect(decodeMirrorOrigin(encodeMirrorOrigin(origin))).toEqual(origin);
    }
    const plain = encodeMirrorOrigin({ source: 'dc1', partition: 3, offset: 300n });
    expect(encodeMirrorOrigin({ source: 'dc1', partition: 3, offset: 300n, from: 300n })).toEqual(plain);
    expect(plain[0]).toBe(1);
    expect(decodeMirrorOrigin(plain)).toEqual({ source: 'dc1', partition: 3, offset: 300n });
    expect(encodeMirrorOrigin({ source: 'dc1', partition: 3, offset: 300n, from: 290n })).toHaveLength(plain.length + 1);
    expect(() => encodeMirrorOrigin({ source: 'dc1', partition: 0, offset: 3n, from: 4n })).toThrow(/gap/);
  });

  it('is compact: a few bytes besides the source name', () => {
    expect(encodeMirrorOrigin({ source: 'dc1', partition: 3, offset: 1_000_000n })).toHaveLength(1 + 1 + 3 + 1 + 3);
  });

  it('refuses what it cannot encode', () => {
    expect(() => encodeMirrorOrigin({ source: '', partition: 0, offset: 0n })).toThrow(/source name/);
    expect(() => encodeMirrorOrigin({ source: 'dc1', partition: -1, offset: 0n })).toThrow(/non-negative/);
    expect(() => encodeMirrorOrigin({ source: 'dc1', partition: 0, offset: -1n })).toThrow(/non-negative/);
  });

  it('leaves unread a value of another version, cut off, or with bytes after it', () => {
    const good = encodeMirrorOrigin({ source: 'dc1', partition: 5, offset: 300n });
    expect(decodeMirrorOrigin(Buffer.concat([Buffer.from([3]), good.subarray(1)]))).toBeUndefined();
    // Version 2 must carry a gap of at least one offset and at most the offset itself.
    expect(decodeMirrorOrigin(Buffer.concat([Buffer.from([2]), good.subarray(1)]))).toBeUndefined();
    expect(decodeMirrorOrigin(Buffer.concat([Buffer.from([2]), good.subarray(1), Buffer.from([0])]))).toBeUndefined();
    expect(decodeMirrorOrigin(Buffer.concat([Buffer.from([2]), good.subarray(1), Buffer.from([0xad, 0x02])]))).toBeUndefined();
    for (let length = 0; length < good.length; length += 1) expect(decodeMirrorOrigin(good.subarray(0, length))).toBeUndefined();
    expect(decodeMirrorOrigin(Buffer.concat([good, Buffer.from([0])]))).toBeUndefined();
    expect(decodeMirrorOrigin(Buffer.from([1, 3, 0x64, 0x63, 0x31, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01, 0x00]))).toBeUndefined();
  });

  it("is added beside the record's headers, replacing the origin of an earlier mirror hop and keeping the audit's origin", () => {
    const earlier = { key: MIRROR_ORIGIN_HEADER, value: encodeMirrorOrigin({ source: 'edge', partition: 1, offset: 9n }) };
    const headers = [{ key: ORIGIN_HEADER, value: Buffer.from('web-1') }, earlier, { key: 'trace', value: null }];
    const mirrored = withMirrorOrigin(headers, { source: 'dc1', partition: 2, offset: 77n });
    expect(mirrored.map((header) => header.key)).toEqual([ORIGIN_HEADER, 'trace', MIRROR_ORIGIN_HEADER]);
    expect(mirrorOriginOf(mirrored)).toEqual({ source: 'dc1', partition: 2, offset: 77n });
    expect(mirrorOriginOf([{ key: 'trace', value: null }])).toBeUndefined();
    expect(mirrorOriginOf([{ key: MIRROR_ORIGIN_HEADER, value: null }])).toBeUndefined();
  });
});
