/** How `tributary groups describe` reads a member's assignment bytes: whatever a client sent. */
import { describe, expect, it } from 'vitest';
import { decodeAssignment } from '../../../src/client/broker-groups.js';
import { encodeConsumerAssignment } from '../../../src/protocol/consumer-protocol.js';

describe('decodeAssignment', () => {
  it('decodes a consumer assignment of any version, partitions in order', () => {
    for (const version of [0, 1, 3]) {
      const bytes = encodeConsumerAssignment({ version, assignedPartitions: [{ topic: 'orders', partitions: [2, 0] }, { topic: 'audit', partitions: [1] }] });
      expect(decodeAssignment('consumer', bytes)).toEqual({
        assignment: [
          { topic: 'orders', partitions: [0, 2] },
          { topic: 'audit', partitions: [1] },
        ],
        note: undefined,
      });
    }
  });

  it('says why when there is nothing to decode, instead of failing', () => {
    expect(decodeAssignment('consumer', Buffer.alloc(0))).toEqual({ assignment: undefined, note: 'no assignment yet (the group is not Stable)' });
    expect(decodeAssignment('consumer', Buffer.from([0, 0, 0, 0, 0, 9, 1]))).toEqual({ assignment: undefined, note: 'undecodable assignment (7 bytes)' });
    expect(decodeAssignment('consumer', Buffer.from([0xff, 0xff]))).toEqual({ assignment: undefined, note: 'undecodable assignment (2 bytes)' });
    expect(decodeAssignment('connect', Buffer.from('worker-1'))).toEqual({ assignment: undefined, note: 'assignment of protocol type "connect", not a consumer\'s (8 bytes)' });
  });
});
