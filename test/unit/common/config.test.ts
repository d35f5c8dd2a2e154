import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { hostPortSchema, parseConfig, zookeeperConnectSchema } from '../../../src/common/config.js';
import { TributaryError } from '../../../src/common/errors.js';

describe('parseConfig', () => {
  const schema = z.object({ listen: hostPortSchema, partitions: z.number().int().positive() });

  it('returns the parsed value when it is valid', () => {
    expect(parseConfig(schema, { listen: '127.0.0.1:9092', partitions: 3 }, 'flags')).toEqual({
      listen: '127.0.0.1:9092',
      partitions: 3,
    });
  });

  it('names the source and every bad field in one CONFIG_INVALID error', () => {
    let caught: unknown;
    try {
      parseConfig(schema, { listen: 'nohost', partitions: 0 }, 'jobs/page-views.yaml');
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(TributaryError);
    const error = caught as TributaryError;
    expect(error.code).toBe('CONFIG_INVALID');
    expect(error.retriable).toBe(false);
    expect(error.message).toContain('jobs/page-views.yaml');
    expect(error.message).toContain('listen: expected HOST:PORT with a port from 0 to 65535');
    expect(error.message).toContain('partitions:');
    expect(error.details['problems']).toHaveLength(2);
  });
});

describe('address schemas', () => {
  it('accepts HOST:PORT and rejects ports out of range', () => {
    expect(hostPortSchema.safeParse('localhost:0').success).toBe(true);
    expect(hostPortSchema.safeParse('[::1]:9092').success).toBe(true);
    expect(hostPortSchema.safeParse('127.0.0.1:65536').success).toBe(false);
    expect(hostPortSchema.safeParse('127.0.0.1').success).toBe(false);
  });

  it('accepts ZooKeeper connect strings with several hosts and a chroot', () => {
    expect(zookeeperConnectSchema.safeParse('127.0.0.1:2181').success).toBe(true);
    expect(zookeeperConnectSchema.safeParse('a:1,b:2,c:3/tributary/online').success).toBe(true);
    expect(zookeeperConnectSchema.safeParse('/chroot-only').success).toBe(false);
    expect(zookeeperConnectSchema.safeParse('a:1,,b:2').success).toBe(false);
  });
});
