import { describe, expect, it } from 'vitest';
import { keyPartition, murmur2, Partitioner, toPositive } from '../../../src/client/partitioner.js';

/** A small deterministic source of numbers in [0, 1) (mulberry32). */
function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('murmur2', () => {
  // Apache Kafka's UtilsTest.testMurmur2 (clients/src/test/java/org/apache/kafka/common/utils).
  const javaVectors: [string, number][] = [
    ['21', -973932308],
    ['foobar', -790332482],
    ['a-little-bit-long-string', -985981536],
    ['a-little-bit-longer-string', -1486304829],
    ['lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8', -58897971],
    ['abc', 479470107],
  ];
  for (const [input, expected] of javaVectors) {
    it(`hashes "${input}" (${input.length % 4} tail bytes) to ${expected} as Java does`, () => {
      expect(murmur2(Buffer.from(input, 'latin1'))).toBe(expected);
    });
  }

  it('hashes the empty key and bytes with the high bit set like Java (bytes masked with 0xff)', () => {
    // Computed with an independent 32-bit port of Utils.murmur2 (Python, masking every step);
    // the compat test checks the same path end to end against librdkafka with non-ASCII keys.
    expect(murmur2(Buffer.alloc(0))).toBe(275646681);
    expect(murmur2(Buffer.from([0xff, 0xfe, 0x80]))).toBe(-160726397);
    expect(murmur2(Buffer.from([0, 1, 2, 3, 4, 5, 6]))).toBe(-1488168820);
  });

  it('returns a signed 32-bit integer for any input', () => {
    const random = seeded(7);
    for (let i = 0; i < 1000; i += 1) {
      const bytes = Buffer.from(Array.from({ length: Math.floor(random() * 40) }, () => Math.floor(random() * 256)));
      const hash = murmur2(bytes);
      expect(Number.isInteger(hash)).toBe(true);
      expect(hash).toBe(hash | 0);
    }
  });
});

describe('keyPartition', () => {
  it('is toPositive(murmur2(key)) % partitions, with toPositive clearing the sign bit (not abs)', () => {
    expect(toPositive(-790332482)).toBe(1357151166);
    expect(toPositive(-2147483648)).toBe(0);
    expect(toPositive(5)).toBe(5);
    expect(keyPartition(Buffer.from('foobar'), 10)).toBe(6);
    expect(keyPartition(Buffer.from('foobar'), 50)).toBe(16);
    expect(keyPartition(Buffer.from('21'), 1)).toBe(0);
  });

  it('spreads 10,000 distinct keys evenly over 8 partitions', () => {
    const counts = new Array<number>(8).fill(0);
    for (let i = 0; i < 10_000; i += 1) {
      const partition = keyPartition(Buffer.from(`key-${i}`), 8);
      counts[partition] = (counts[partition] ?? 0) + 1;
    }
    for (const count of counts) {
      expect(count).toBeGreaterThan(1250 * 0.85);
      expect(count).toBeLessThan(1250 * 1.15);
    }
  });

  it('refuses a partition count below 1', () => {
    expect(() => keyPartition(Buffer.from('k'), 0)).toThrow(/at least one partition/);
  });
});

describe('Partitioner', () => {
  it('sends keyed records by murmur2 whatever the null-key strategy', () => {
    for (const nullKeys of ['round-robin', 'random'] as const) {
      const partitioner = new Partitioner({ nullKeys });
      expect(partitioner.partition('t', Buffer.from('foobar'), 10)).toBe(6);
      // An empty key is a key (Java hashes it); only null and absent keys are spread.
      expect(partitioner.partition('t', Buffer.alloc(0), 1000)).toBe(toPositive(275646681) % 1000);
    }
  });

  it('round-robin cycles through every partition, with a counter per topic', () => {
    const partitioner = new Partitioner({ nullKeys: 'round-robin', random: () => 0 });
    expect(Array.from({ length: 8 }, () => partitioner.partition('a', null, 4))).toEqual([0, 1, 2, 3, 0, 1, 2, 3]);
    expect(partitioner.partition('b', undefined, 4)).toBe(0);
    expect(partitioner.partition('a', null, 4)).toBe(0);
  });

  it('round-robin over the available partitions only, when some have no leader', () => {
    const partitioner = new Partitioner({ nullKeys: 'round-robin', random: () => 0 });
    expect(Array.from({ length: 4 }, () => partitioner.partition('a', null, 6, [1, 4]))).toEqual([1, 4, 1, 4]);
    // Keyed records keep their partition even when it has no leader.
    expect(partitioner.partition('a', Buffer.from('foobar'), 10, [0])).toBe(6);
  });

  it('random covers every partition roughly evenly', () => {
    const partitioner = new Partitioner({ nullKeys: 'random', random: seeded(42) });
    const counts = new Array<number>(5).fill(0);
    for (let i = 0; i < 5000; i += 1) {
      const partition = partitioner.partition('t', null, 5);
      counts[partition] = (counts[partition] ?? 0) + 1;
    }
    for (const count of counts) expect(count).toBeGreaterThan(800);
  });
});
