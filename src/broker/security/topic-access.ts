/**
 * The one topic check several handlers share: may the principal DESCRIBE a topic. Replication
 * requests (a follower's ListOffsets or OffsetForLeaderEpoch) are also allowed by CLUSTER_ACTION
 * on the cluster, as Kafka allows them. Answers are remembered for the request.
 */
import { AclOperation, CLUSTER_RESOURCE_NAME, ResourceType } from './acl.js';
import type { Authorizer } from './authorizer.js';
import type { ConnectionIdentity } from './identity.js';

export function mayDescribeTopic(authorizer: Authorizer, identity: ConnectionIdentity, clusterActionAllows: boolean): (topic: string) => boolean {
  const replicating = clusterActionAllows && authorizer.authorize(identity, AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER, CLUSTER_RESOURCE_NAME);
  const decided = new Map<string, boolean>();
  return (topic) => {
    if (replicating) return true;
    let allowed = decided.get(topic);
    if (allowed === undefined) {
      allowed = authorizer.authorize(identity, AclOperation.DESCRIBE, ResourceType.TOPIC, topic);
      decided.set(topic, allowed);
    }
    return allowed;
  };
}
