/**
 * The leader/ISR state of one partition, kept at `/brokers/topics/<t>/partitions/<p>/state`
 * (paths.ts `partitionStatePath`). Kafka's JSON (ZkData.scala's TopicPartitionStateZNode), plus
 * two fields of ours:
 *
 *   {"version":1,"leader":2,"leader_epoch":5,"isr":[2,3],"controller_epoch":7,
 *    "replica_storage":{"2":"<storage id>","3":"<storage id>"},"leader_incarnation":"<uuid>"}
 *
 *   version           1, Kafka's only version (absent is read as 1)
 *   leader            the leader's broker id, or −1 (NO_LEADER) while no ISR member is live
 *   leader_epoch      +1 at every leader change; a follower truncates by it, requests are fenced by it
 *   isr               the in-sync replicas, broker ids, each once
 *   controller_epoch  the epoch of the controller that last wrote the node
 *   replica_storage   broker id → the storage id of that ISR member's data directory when it
 *                     joined the ISR; a broker back with another id lost its disk and must not
 *                     count as in sync (replication.md §5.2). Absent in nodes Kafka wrote: {}
 *   leader_incarnation the incarnation (cluster.ts: new at every broker start) the leader was
 *                     elected in; a leader that restarted must not resume from this state, the
 *                     controller elects anew (replication.md §5.3 step 4). "" or absent: not known
 *
 * All numbers are int32 on the wire (Metadata, LeaderAndIsr, Fetch), so they are bounded to
 * int32 here. Whoever changes the node writes it with the version it read (compare-and-set);
 * that, not anything in the data, is what orders concurrent writers. Reading checks the shape
 * only: whether the leader is in the ISR is the controller's rule, not the codec's.
 */
import { z } from 'zod';
import { TributaryError } from '../common/errors.js';

/** `leader` while the partition has no leader (Kafka's LeaderAndIsr.NoLeader). */
export const NO_LEADER = -1;

export interface PartitionState {
  readonly leader: number;
  readonly leaderEpoch: number;
  readonly isr: readonly number[];
  readonly controllerEpoch: number;
  /** storage id of each ISR member's data dir when it joined (a wiped disk shows a new id) */
  readonly replicaStorage: Readonly<Record<string, string>>;
  /** The incarnation of the leader's process when it was elected; "" when not known. */
  readonly leaderIncarnation: string;
}

const INT32_MAX = 2 ** 31 - 1;

const brokerId = z.number().int().min(0, 'must be a broker id (>= 0)').max(INT32_MAX, 'must fit in an int32');
const epoch = z.number().int().min(0, 'must not be negative').max(INT32_MAX, 'must fit in an int32');

const stateSchema = z.object({
  version: z.literal(1, 'must be 1, the only leader/ISR state version').optional(),
  leader: z.number().int().min(NO_LEADER, `must be ${NO_LEADER} (no leader) or a broker id`).max(INT32_MAX, 'must fit in an int32'),
  leader_epoch: epoch,
  isr: z.array(brokerId).superRefine((isr, context) => {
    const twice = isr.find((id, index) => isr.indexOf(id) !== index);
    if (twice !== undefined) context.addIssue({ code: 'custom', message: `lists broker ${twice} more than once` });
  }),
  controller_epoch: epoch,
  replica_storage: z
    .record(z.string(), z.string().min(1, 'must be a non-empty storage id'))
    .superRefine((storage, context) => {
      for (const key of Object.keys(storage)) {
        if (!/^(0|[1-9]\d*)$/.test(key)) context.addIssue({ code: 'custom', path: [key], message: 'the key is not a broker id' });
      }
    })
    .optional(),
  leader_incarnation: z.string().optional(),
});

/** The node's bytes for `state`; throws INVALID_PARTITION_STATE rather than write what could not be read back. */
export function encodePartitionState(state: PartitionState): Buffer {
  const json = {
    version: 1,
    leader: state.leader,
    leader_epoch: state.leaderEpoch,
    isr: [...state.isr],
    controller_epoch: state.controllerEpoch,
    replica_storage: { ...state.replicaStorage },
    ...(state.leaderIncarnation === '' ? {} : { leader_incarnation: state.leaderIncarnation }),
  };
  check(json, 'the partition state to write');
  return Buffer.from(JSON.stringify(json));
}

/** Reads a state node's bytes; `where` (usually its path) names it in the error if they are not a valid state. */
export function decodePartitionState(data: Buffer, where: string): PartitionState {
  let json: unknown;
  try {
    json = JSON.parse(data.toString('utf8'));
  } catch (error) {
    throw invalidState(where, `it is not JSON (${(error as Error).message})`, data, error);
  }
  const parsed = check(json, where, data);
  return {
    leader: parsed.leader,
    leaderEpoch: parsed.leader_epoch,
    isr: parsed.isr,
    controllerEpoch: parsed.controller_epoch,
    replicaStorage: parsed.replica_storage ?? {},
    leaderIncarnation: parsed.leader_incarnation ?? '',
  };
}

function check(json: unknown, where: string, data?: Buffer): z.infer<typeof stateSchema> {
  const result = stateSchema.safeParse(json);
  if (result.success) return result.data;
  const problems = result.error.issues.map((issue) => `${issue.path.map(String).join('.') || '(top level)'}: ${issue.message}`);
  throw invalidState(where, problems.slice(0, 5).join('; '), data, result.error, problems);
}

function invalidState(where: string, reason: string, data: Buffer | undefined, cause: unknown, problems: readonly string[] = [reason]): TributaryError {
  const what = data === undefined ? `${where} is` : `${where} holds ${JSON.stringify(data.toString('utf8').slice(0, 200))}, which is`;
  return new TributaryError({
    code: 'INVALID_PARTITION_STATE',
    message: `${what} not a valid partition leader/ISR state: ${reason}`,
    cause,
    details: { where, problems },
  });
}
