import { describe, expect, it } from 'vitest';
import { TributaryError } from '../../../src/common/errors.js';
import { NO_LEADER, decodePartitionState, encodePartitionState, type PartitionState } from '../../../src/coordination/partition-state.js';

const WHERE = '/brokers/topics/orders/partitions/0/state';
const STORAGE_2 = '6f1c2a52-5f0e-4d8e-9a63-0c8f3b1d2e47';
const STORAGE_3 = 'b0e7d1c4-1a2b-4c3d-8e9f-a1b2c3d4e5f6';

const INCARNATION = '0d9b7e0c-3f41-4b8a-9d52-6a1e2f3c4b5d';
const STATE: PartitionState = { leader: 2, leaderEpoch: 5, isr: [2, 3], controllerEpoch: 7, replicaStorage: { '2': STORAGE_2, '3': STORAGE_3 }, leaderIncarnation: INCARNATION };

function decode(json: string): PartitionState {
  return decodePartitionState(Buffer.from(json), WHERE);
}

/** The error decoding `json` throws (fails the test if none). */
function refusal(json: string): TributaryError {
  try {
    decode(json);
  } catch (error) {
    if (error instanceof TributaryError) return error;
    throw error;
  }
  throw new Error(`${json} was accepted`);
}

describe('partition state', () => {
  it("writes Kafka's JSON, in Kafka's field order, plus replica_storage and leader_incarnation", () => {
    expect(encodePartitionState(STATE).toString('utf8')).toBe(
      `{"version":1,"leader":2,"leader_epoch":5,"isr":[2,3],"controller_epoch":7,"replica_storage":{"2":"${STORAGE_2}","3":"${STORAGE_3}"},"leader_incarnation":"${INCARNATION}"}`,
    );
  });

  it('reads back what it writes', () => {
    expect(decodePartitionState(encodePartitionState(STATE), WHERE)).toStrictEqual(STATE);
    const leaderless: PartitionState = { leader: NO_LEADER, leaderEpoch: 9, isr: [3], controllerEpoch: 8, replicaStorage: { '3': STORAGE_3 }, leaderIncarnation: '' };
    expect(decodePartitionState(encodePartitionState(leaderless), WHERE)).toStrictEqual(leaderless);
  });

  it('reads a node Kafka wrote (no replica_storage) as one with no storage ids', () => {
    expect(decode('{"controller_epoch":1,"leader":1,"version":1,"leader_epoch":0,"isr":[1,2,3]}')).toStrictEqual({
      leader: 1,
      leaderEpoch: 0,
      isr: [1, 2, 3],
      controllerEpoch: 1,
      replicaStorage: {},
      leaderIncarnation: '',
    });
  });

  it('reads a node without a version, and ignores fields it does not know', () => {
    expect(decode('{"leader":-1,"leader_epoch":3,"isr":[],"controller_epoch":2,"leader_recovery_state":0}')).toStrictEqual({
      leader: NO_LEADER,
      leaderEpoch: 3,
      isr: [],
      controllerEpoch: 2,
      replicaStorage: {},
      leaderIncarnation: '',
    });
  });

  it.each([
    ['not JSON', '{"leader":', 'not JSON'],
    ['not an object', '[1,2]', '(top level)'],
    ['another version', '{"version":2,"leader":1,"leader_epoch":0,"isr":[1],"controller_epoch":1}', 'version: must be 1'],
    ['a missing leader', '{"version":1,"leader_epoch":0,"isr":[1],"controller_epoch":1}', 'leader:'],
    ['a leader below -1', '{"version":1,"leader":-2,"leader_epoch":0,"isr":[1],"controller_epoch":1}', 'leader: must be -1 (no leader) or a broker id'],
    ['a fractional leader', '{"version":1,"leader":1.5,"leader_epoch":0,"isr":[1],"controller_epoch":1}', 'leader:'],
    ['a leader given as a string', '{"version":1,"leader":"1","leader_epoch":0,"isr":[1],"controller_epoch":1}', 'leader:'],
    ['a negative leader epoch', '{"version":1,"leader":1,"leader_epoch":-1,"isr":[1],"controller_epoch":1}', 'leader_epoch: must not be negative'],
    ['a leader epoch beyond int32', '{"version":1,"leader":1,"leader_epoch":2147483648,"isr":[1],"controller_epoch":1}', 'leader_epoch: must fit in an int32'],
    ['a broker twice in the ISR', '{"version":1,"leader":1,"leader_epoch":0,"isr":[1,2,1],"controller_epoch":1}', 'isr: lists broker 1 more than once'],
    ['a negative ISR member', '{"version":1,"leader":1,"leader_epoch":0,"isr":[1,-1],"controller_epoch":1}', 'isr.1: must be a broker id'],
    ['a fractional ISR member', '{"version":1,"leader":1,"leader_epoch":0,"isr":[1,2.5],"controller_epoch":1}', 'isr.1:'],
    ['an ISR that is not a list', '{"version":1,"leader":1,"leader_epoch":0,"isr":"1,2","controller_epoch":1}', 'isr:'],
    ['a missing controller epoch', '{"version":1,"leader":1,"leader_epoch":0,"isr":[1]}', 'controller_epoch:'],
    ['a storage id under a name that is not a broker id', '{"version":1,"leader":1,"leader_epoch":0,"isr":[1],"controller_epoch":1,"replica_storage":{"b1":"x"}}', 'replica_storage.b1: the key is not a broker id'],
    ['an empty storage id', '{"version":1,"leader":1,"leader_epoch":0,"isr":[1],"controller_epoch":1,"replica_storage":{"1":""}}', 'replica_storage.1: must be a non-empty storage id'],
  ])('refuses %s with INVALID_PARTITION_STATE naming where and what', (_name, json, what) => {
    const error = refusal(json);
    expect(error.code).toBe('INVALID_PARTITION_STATE');
    expect(error.retriable).toBe(false);
    expect(error.message).toContain(WHERE);
    expect(error.message).toContain(what);
    expect(error.details).toMatchObject({ where: WHERE });
  });

  it('refuses to write a state it could not read back', () => {
    const write = (state: PartitionState) => () => encodePartitionState(state);
    expect(write({ ...STATE, isr: [2, 2] })).toThrow(/lists broker 2 more than once/);
    expect(write({ ...STATE, leader: -5 })).toThrow(TributaryError);
    expect(write({ ...STATE, leaderEpoch: Number.NaN })).toThrow(/leader_epoch/);
    try {
      encodePartitionState({ ...STATE, controllerEpoch: -1 });
    } catch (error) {
      expect(error).toMatchObject({ code: 'INVALID_PARTITION_STATE', message: expect.stringContaining('controller_epoch: must not be negative') as unknown });
    }
    expect.assertions(4);
  });
});
