/** Where mirrored records go, which topics are mirrored, and the shared audit flush. */
import { describe, expect, it } from 'vitest';
import { keyPartition } from '../../../src/client/partitioner.js';
import { parseMirrorSettings, parseSourceFlag } from '../../../src/mirror/config.js';
import { targetPartition } from '../../../src/mirror/placement.js';
import { AUDIT_TOPIC, TopicFilter } from '../../../src/mirror/topic-filter.js';

describe('targetPartition', () => {
  it('keeps the partition number while the counts match', () => {
    for (let partition = 0; partition < 4; partition += 1) expect(targetPartition(partition, 4, 4, Buffer.from('any key'))).toBe(partition);
    expect(targetPartition(2, 4, 4, null)).toBe(2);
  });

  it('places a keyed record by murmur2 when the counts differ', () => {
    const key = Buffer.from('user-42');
    expect(targetPartition(0, 4, 6, key)).toBe(keyPartition(key, 6));
    expect(targetPartition(5, 6, 4, key)).toBe(keyPartition(key, 4));
  });

  it("leaves a record without a key to the producer's spreading when the counts differ", () => {
    expect(targetPartition(1, 2, 3, null)).toBeUndefined();
  });
});

describe('TopicFilter', () => {
  it('matches whole names: whitelist minus blacklist, and the audit topic always', () => {
    const filter = new TopicFilter('app\\..*|events', 'app\\.secret\\..*');
    expect(filter.matches('events')).toBe(true);
    expect(filter.matches('app.clicks')).toBe(true);
    expect(filter.matches('events2')).toBe(false); // not a whole-name match
    expect(filter.matches('my.events')).toBe(false);
    expect(filter.matches('app.secret.keys')).toBe(false);
    expect(filter.matches(AUDIT_TOPIC)).toBe(true);
    expect(new TopicFilter('nothing', '.*').matches(AUDIT_TOPIC)).toBe(true);
  });
});

describe('mirror settings', () => {
  it('reads NAME=ZK sources and applies defaults', () => {
    const settings = parseMirrorSettings({ sources: [parseSourceFlag('dc1=127.0.0.1:2181/online1')], whitelist: '.*', group: 'g' }, 'test');
    expect(settings.sources).toEqual([{ name: 'dc1', zookeeper: '127.0.0.1:2181/online1' }]);
    expect(settings.autoOffsetReset).toBe('smallest');
    expect(settings.commitIntervalMs).toBe(1000);
  });

  it('names every bad field at once', () => {
    expect(() => parseMirrorSettings({ sources: [{ name: 'a b', zookeeper: 'nope' }, { name: 'a b', zookeeper: 'h:1' }], whitelist: '(', group: '' }, 'flags')).toThrow(
      /sources\.0\.name: .*sources\.0\.zookeeper: .*whitelist: not a valid regular expression; group: /,
    );
    expect(() => parseSourceFlag('dc1')).toThrow('--source takes NAME=ZK_CONNECT');
  });
});
