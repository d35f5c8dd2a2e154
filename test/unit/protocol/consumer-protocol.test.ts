/** The consumer protocol's Subscription and Assignment: golden bytes, per-version defaults, tolerance of newer versions, truncation. */
import { describe, expect, it } from 'vitest';
import {
  CONSUMER_PROTOCOL_TYPE,
  CONSUMER_PROTOCOL_VERSION,
  decodeConsumerAssignment,
  decodeConsumerSubscription,
  encodeConsumerAssignment,
  encodeConsumerSubscription,
  type ConsumerProtocolAssignment,
  type ConsumerProtocolSubscription,
} from '../../../src/protocol/consumer-protocol.js';
import { hex, thrownBy, truncationOutcomes } from './apis/helpers.js';

const SUBSCRIPTION: ConsumerProtocolSubscription = {
  version: 3,
  topics: ['orders', 'payments'],
  userData: Buffer.from([0xab, 0xcd]),
  ownedPartitions: [
    { topic: 'orders', partitions: [0, 2] },
    { topic: 'payments', partitions: [1] },
  ],
  generationId: 7,
  rackId: 'rack-a',
};

function expectedSubscription(v: number): ConsumerProtocolSubscription {
  return {
    version: v,
    topics: SUBSCRIPTION.topics,
    userData: SUBSCRIPTION.userData,
    ownedPartitions: v >= 1 ? SUBSCRIPTION.ownedPartitions : [],
    generationId: v >= 2 ? SUBSCRIPTION.generationId : -1,
    rackId: v >= 3 ? SUBSCRIPTION.rackId : null,
  };
}

const ASSIGNMENT: ConsumerProtocolAssignment = {
  version: 3,
  assignedPartitions: [
    { topic: 'orders', partitions: [1, 3] },
    { topic: 'payments', partitions: [0] },
  ],
  userData: null,
};

// Subscription v3 of topics ["t"], UserData ab cd, OwnedPartitions t:[0, 2], GenerationId 7, RackId "r1".
const SUBSCRIPTION_V3 = hex(`
  00 03                       # Version 3
  00 00 00 01 | 00 01 74      # Topics: 1, "t"
  00 00 00 02 ab cd           # UserData: 2 bytes
  00 00 00 01                 # OwnedPartitions: 1
  00 01 74                    #   Topic "t"
  00 00 00 02                 #   Partitions: 2
  00 00 00 00 | 00 00 00 02   #     0, 2
  00 00 00 07                 # GenerationId 7
  00 02 72 31                 # RackId "r1"
`);

describe('consumer protocol constants', () => {
  it('is protocol type "consumer", up to version 3', () => {
    expect(CONSUMER_PROTOCOL_TYPE).toBe('consumer');
    expect(CONSUMER_PROTOCOL_VERSION).toBe(3);
  });
});

describe('Subscription', () => {
  for (const v of [0, 1, 2, 3]) {
    it(`round-trips v${v}, absent fields taking Kafka's defaults`, () => {
      const bytes = encodeConsumerSubscription({ ...SUBSCRIPTION, version: v });
      expect(bytes.readInt16BE(0)).toBe(v);
      expect(decodeConsumerSubscription(bytes)).toStrictEqual(expectedSubscription(v));
    });
  }

  it('golden v0 bytes: Version, Topics, UserData and nothing else', () => {
    const bytes = hex(`
      00 00                       # Version 0
      00 00 00 02                 # Topics: 2
      00 01 61 | 00 01 62         #   "a", "b"
      ff ff ff ff                 # UserData null
    `);
    const decoded: ConsumerProtocolSubscription = { version: 0, topics: ['a', 'b'], userData: null, ownedPartitions: [], generationId: -1, rackId: null };
    expect(encodeConsumerSubscription({ version: 0, topics: ['a', 'b'], ownedPartitions: [{ topic: 'a', partitions: [0] }], generationId: 3, rackId: 'r' })).toStrictEqual(bytes);
    expect(decodeConsumerSubscription(bytes)).toStrictEqual(decoded);
  });

  it('golden v3 bytes', () => {
    const value: ConsumerProtocolSubscription = { version: 3, topics: ['t'], userData: Buffer.from([0xab, 0xcd]), ownedPartitions: [{ topic: 't', partitions: [0, 2] }], generationId: 7, rackId: 'r1' };
    expect(encodeConsumerSubscription(value)).toStrictEqual(SUBSCRIPTION_V3);
    expect(decodeConsumerSubscription(SUBSCRIPTION_V3)).toStrictEqual(value);
  });

  it('encodes version 3 and Kafka defaults when only topics are given', () => {
    expect(encodeConsumerSubscription({ topics: ['t'] })).toStrictEqual(
      hex(`
        00 03 | 00 00 00 01 | 00 01 74   # Version 3, Topics ["t"]
        ff ff ff ff                      # UserData null
        00 00 00 00                      # OwnedPartitions []
        ff ff ff ff                      # GenerationId -1
        ff ff                            # RackId null
      `),
    );
  });

  it('a newer version is decoded as v3, its extra fields ignored, its version kept', () => {
    const v5 = Buffer.concat([hex('00 05'), SUBSCRIPTION_V3.subarray(2), hex('00 00 00 09 | 01 02 03')]);
    expect(decodeConsumerSubscription(v5)).toStrictEqual({ ...decodeConsumerSubscription(SUBSCRIPTION_V3), version: 5 });
  });

  it('bytes after the fields of the version given are ignored (a v3 body labelled v0)', () => {
    const labelledV0 = Buffer.concat([hex('00 00'), SUBSCRIPTION_V3.subarray(2)]);
    expect(decodeConsumerSubscription(labelledV0)).toStrictEqual({ version: 0, topics: ['t'], userData: Buffer.from([0xab, 0xcd]), ownedPartitions: [], generationId: -1, rackId: null });
  });

  it('every truncation is a MalformedMessageError, at every version', () => {
    for (const v of [0, 1, 2, 3]) {
      const bytes = encodeConsumerSubscription({ ...SUBSCRIPTION, version: v });
      expect(truncationOutcomes(bytes, decodeConsumerSubscription), `v${v}`).toEqual(['MalformedMessageError']);
    }
  });

  it('a negative version is a MalformedMessageError; the encoder refuses versions it does not know', () => {
    expect(thrownBy(() => decodeConsumerSubscription(Buffer.concat([hex('ff ff'), SUBSCRIPTION_V3.subarray(2)])))).toBe('MalformedMessageError');
    expect(thrownBy(() => encodeConsumerSubscription({ version: 4, topics: [] }))).toMatch(/^RangeError/);
    expect(thrownBy(() => encodeConsumerSubscription({ version: -1, topics: [] }))).toMatch(/^RangeError/);
  });

  it('a hostile topic count is a MalformedMessageError', () => {
    expect(thrownBy(() => decodeConsumerSubscription(hex('00 00 | 7f ff ff ff | 00 01 74')))).toBe('MalformedMessageError');
  });
});

describe('Assignment', () => {
  for (const v of [0, 1, 2, 3]) {
    it(`round-trips v${v} (every version has the same fields)`, () => {
      const bytes = encodeConsumerAssignment({ ...ASSIGNMENT, version: v });
      expect(bytes.subarray(2)).toStrictEqual(encodeConsumerAssignment({ ...ASSIGNMENT, version: 0 }).subarray(2));
      expect(decodeConsumerAssignment(bytes)).toStrictEqual({ ...ASSIGNMENT, version: v });
    });
  }

  it('golden v0 and v3 bytes', () => {
    const body = `
      00 00 00 01                 # AssignedPartitions: 1
      00 01 74                    #   Topic "t"
      00 00 00 02                 #   Partitions: 2
      00 00 00 01 | 00 00 00 03   #     1, 3
      ff ff ff ff                 # UserData null
    `;
    const v0 = hex(`00 00 ${body}`);
    const v3 = hex(`00 03 ${body}`);
    const value = { assignedPartitions: [{ topic: 't', partitions: [1, 3] }] };
    expect(encodeConsumerAssignment({ ...value, version: 0 })).toStrictEqual(v0);
    expect(encodeConsumerAssignment(value)).toStrictEqual(v3);
    expect(decodeConsumerAssignment(v0)).toStrictEqual({ version: 0, ...value, userData: null });
    expect(decodeConsumerAssignment(v3)).toStrictEqual({ version: 3, ...value, userData: null });
  });

  it('UserData bytes', () => {
    const bytes = hex('00 01 | 00 00 00 00 | 00 00 00 03 01 02 03');
    expect(decodeConsumerAssignment(bytes)).toStrictEqual({ version: 1, assignedPartitions: [], userData: Buffer.from([1, 2, 3]) });
    expect(encodeConsumerAssignment({ version: 1, assignedPartitions: [], userData: Buffer.from([1, 2, 3]) })).toStrictEqual(bytes);
  });

  it('a newer version is decoded as v3, its extra fields ignored', () => {
    const bytes = Buffer.concat([hex('00 04'), encodeConsumerAssignment(ASSIGNMENT).subarray(2), hex('00 02 78 79')]);
    expect(decodeConsumerAssignment(bytes)).toStrictEqual({ ...ASSIGNMENT, version: 4 });
  });

  it('every truncation is a MalformedMessageError; so are empty bytes and a negative version', () => {
    expect(truncationOutcomes(encodeConsumerAssignment(ASSIGNMENT), decodeConsumerAssignment)).toEqual(['MalformedMessageError']);
    expect(thrownBy(() => decodeConsumerAssignment(Buffer.alloc(0)))).toBe('MalformedMessageError');
    expect(thrownBy(() => decodeConsumerAssignment(hex('80 00 | 00 00 00 00 | ff ff ff ff')))).toBe('MalformedMessageError');
  });
});
