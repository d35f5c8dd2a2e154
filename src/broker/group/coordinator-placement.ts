/**
 * Which broker coordinates a group: rendezvous (highest-random-weight) hashing of the group id
 * over the live brokers in the registry. Every broker computes the same answer from the same
 * registry; when a broker dies only its groups move, and when one joins only the groups that
 * now hash highest to it move there.
 */
import { createHash } from 'node:crypto';

function weight(groupId: string, brokerId: number): bigint {
  return createHash('sha256').update(groupId).update('\u0000').update(String(brokerId)).digest().readBigUInt64BE(0);
}

/** The coordinating broker's id, or undefined when no broker is live. */
export function coordinatorFor(groupId: string, liveBrokerIds: readonly number[]): number | undefined {
  let best: number | undefined;
  let bestWeight = -1n;
  for (const brokerId of liveBrokerIds) {
    const candidate = weight(groupId, brokerId);
    if (candidate > bestWeight || (candidate === bestWeight && best !== undefined && brokerId < best)) {
      best = brokerId;
      bestWeight = candidate;
    }
  }
  return best;
}
