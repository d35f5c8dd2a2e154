import { describe, expect, it } from 'vitest';
import { TributaryError } from '../../../src/common/errors.js';
import { decodeTopicAssignment, encodeTopicAssignment, type ReplicaAssignment } from '../../../src/coordination/topic-assignment.js';

const WHERE = '/brokers/topics/orders';

function decode(json: string): ReplicaAssignment {
  return decodeTopicAssignment(Buffer.from(json), WHERE);
}

/** The error `action` throws (fails the test if none). */
function refusal(action: () => unknown): TributaryError {
  try {
    action();
  } catch (error) {
    if (error instanceof TributaryError) return error;
    throw error;
  }
  throw new Error('nothing was thrown');
}

describe('topic assignment', () => {
  it('writes the version 2 form, partitions in order', () => {
    const assignment = new Map([
      [1, [2, 3, 1]],
      [0, [1, 2, 3]],
    ]);
    expect(encodeTopicAssignment(assignment).toString('utf8')).toBe('{"version":2,"partitions":{"0":[1,2,3],"1":[2,3,1]}}');
  });

  it('reads back what it writes, as a map in partition order', () => {
    const assignment = new Map([
      [0, [1, 2, 3]],
      [1, [2, 3, 1]],
      [2, [3, 1, 2]],
    ]);
    const read = decodeTopicAssignment(encodeTopicAssignment(assignment), WHERE);
    expect(read).toStrictEqual(assignment);
    expect([...read.keys()]).toEqual([0, 1, 2]);
  });

  it('reads the single-broker form: a bare broker id is a list of one', () => {
    expect(decode('{"partitions":{"1":2,"0":1,"2":1}}')).toStrictEqual(new Map([[0, [1]], [1, [2]], [2, [1]]]));
  });

  it("reads Kafka's version 1 and mixed forms, and ignores the reassignment fields", () => {
    expect(decode('{"version":1,"partitions":{"0":[4,5]}}')).toStrictEqual(new Map([[0, [4, 5]]]));
    expect(decode('{"partitions":{"0":3,"1":[3,4]}}')).toStrictEqual(new Map([[0, [3]], [1, [3, 4]]]));
    expect(decode('{"version":2,"partitions":{"0":[1,2]},"adding_replicas":{},"removing_replicas":{}}')).toStrictEqual(new Map([[0, [1, 2]]]));
  });

  it('allows replica lists of different lengths (as a reassignment leaves them)', () => {
    expect(decode('{"version":2,"partitions":{"0":[1,2,3],"1":[2]}}')).toStrictEqual(new Map([[0, [1, 2, 3]], [1, [2]]]));
  });

  it.each([
    ['not JSON', '{"partitions":', 'not JSON'],
    ['no partitions field', '{"version":2}', 'partitions:'],
    ['no partitions', '{"version":2,"partitions":{}}', 'it has no partitions'],
    ['a newer version', '{"version":3,"partitions":{"0":[1]}}', 'version: must be 1 or 2'],
    ['a gap', '{"version":2,"partitions":{"0":[1],"2":[1]}}', 'partitions must be numbered 0..1 with none missing, but 1 is missing'],
    ['no partition 0', '{"version":2,"partitions":{"1":[1],"2":[1]}}', '0 is missing'],
    ['a key that is not a partition number', '{"version":2,"partitions":{"0":[1],"one":[1]}}', 'partitions.one: the key is not a partition number'],
    ['a key with a leading zero', '{"version":2,"partitions":{"0":[1],"01":[1]}}', 'partitions.01: the key is not a partition number'],
    ['an empty replica list', '{"version":2,"partitions":{"0":[1],"1":[]}}', 'partition 1 has no replicas'],
    ['a broker twice in a list', '{"version":2,"partitions":{"0":[1,2,1]}}', 'partition 0 lists broker 1 more than once'],
    ['a negative broker', '{"version":2,"partitions":{"0":[1,-2]}}', 'partition 0 lists -2, which is not a broker id'],
    ['a fractional bare broker', '{"partitions":{"0":1.5}}', 'partition 0 lists 1.5, which is not a broker id'],
    ['a broker given as a string', '{"partitions":{"0":"1"}}', 'partitions.0: must be a broker id or a list of broker ids'],
  ])('refuses %s with INVALID_TOPIC_ASSIGNMENT naming where and what', (_name, json, what) => {
    const error = refusal(() => decode(json));
    expect(error.code).toBe('INVALID_TOPIC_ASSIGNMENT');
    expect(error.retriable).toBe(false);
    expect(error.message).toContain(WHERE);
    expect(error.message).toContain(what);
    expect(error.details).toMatchObject({ where: WHERE });
  });

  it('refuses to write an assignment it could not read back', () => {
    const write = (entries: [number, number[]][]) => refusal(() => encodeTopicAssignment(new Map(entries)));
    expect(write([]).message).toContain('it has no partitions');
    expect(write([[0, [1]], [2, [1]]]).message).toContain('1 is missing');
    expect(write([[0, [1, 1]]]).message).toContain('partition 0 lists broker 1 more than once');
    expect(write([[0, []]]).message).toContain('partition 0 has no replicas');
    expect(write([[0, [1]], [-1, [1]]]).message).toContain('partition -1 is not a partition number');
    expect(write([[0, [0.5]]]).message).toContain('partition 0 lists 0.5, which is not a broker id');
  });
});
