/**
 * One consumer group as the classic-protocol coordinator keeps it in memory: its state, generation,
 * chosen protocol, leader and members (kafka-clients.md §3.2; Kafka's GroupMetadata and
 * MemberMetadata). Pure data and rules, no timers or I/O: group-coordinator.ts drives it.
 *
 * The members' protocol metadata and assignments are opaque bytes: the clients do the assigning
 * (range, roundrobin, sticky, cooperative-sticky), the broker only carries them.
 */

/** Kafka's names, as DescribeGroups reports them and kafka-consumer-groups.sh checks them. */
export type GroupStateName = 'Empty' | 'PreparingRebalance' | 'CompletingRebalance' | 'Stable' | 'Dead';

export interface MemberProtocol {
  readonly name: string;
  readonly metadata: Buffer;
}

export interface JoinOutcome {
  readonly errorCode: number;
  readonly generationId: number;
  readonly protocolName: string;
  readonly leader: string;
  readonly memberId: string;
  /** Only in the leader's answer: every member with its metadata for the chosen protocol. */
  readonly members: readonly { readonly memberId: string; readonly groupInstanceId: string | null; readonly metadata: Buffer }[];
}

export interface SyncOutcome {
  readonly errorCode: number;
  readonly assignment: Buffer;
}

export type TimerHandle = { readonly cancel: () => void };

const NO_BYTES = Buffer.alloc(0);

export class Member {
  assignment: Buffer = NO_BYTES;
  /** The parked JoinGroup of this member, answered when the rebalance completes. */
  awaitingJoin: ((outcome: JoinOutcome) => void) | undefined;
  /** The parked SyncGroup of this member, answered when the leader's assignment arrives. */
  awaitingSync: ((outcome: SyncOutcome) => void) | undefined;
  /** Joined during the current rebalance: may be expired while it waits (Kafka's isNew). */
  isNew = false;
  sessionTimer: TimerHandle | undefined;

  constructor(
    public memberId: string,
    readonly groupInstanceId: string | null,
    public clientId: string,
    public clientHost: string,
    public rebalanceTimeoutMs: number,
    public sessionTimeoutMs: number,
    public protocolType: string,
    public protocols: readonly MemberProtocol[],
  ) {}

  metadataFor(protocol: string): Buffer {
    return this.protocols.find((candidate) => candidate.name === protocol)?.metadata ?? NO_BYTES;
  }

  /** Same protocols, in the same order, with the same metadata bytes. */
  matches(protocols: readonly MemberProtocol[]): boolean {
    return (
      protocols.length === this.protocols.length &&
      protocols.every((protocol, index) => {
        const mine = this.protocols[index];
        return mine !== undefined && mine.name === protocol.name && mine.metadata.equals(protocol.metadata);
      })
    );
  }

  /** This member's vote: its most preferred protocol that every member supports. */
  vote(candidates: ReadonlySet<string>): string | undefined {
    return this.protocols.find((protocol) => candidates.has(protocol.name))?.name;
  }
}

export class Group {
  state: GroupStateName = 'Empty';
  generationId = 0;
  /** Set by the first member to join an Empty group; "" for a group that only commits offsets. */
  protocolType = '';
  protocolName: string | null = null;
  leaderId: string | null = null;
  /** In join order: the first to join leads when the leader is gone. */
  readonly members = new Map<string, Member>();
  /** group.instance.id → the member id that currently holds it. */
  readonly staticMembers = new Map<string, string>();
  /** Member ids handed out with MEMBER_ID_REQUIRED, expiring unless they come back to join. */
  readonly pendingMembers = new Map<string, TimerHandle>();
  /** Members of this generation that have not yet sent SyncGroup. */
  readonly pendingSync = new Set<string>();
  /** A member arrived during the initial rebalance delay (group.initial.rebalance.delay.ms). */
  newMemberAdded = false;
  initialDelayActive = false;
  joinTimer: TimerHandle | undefined;
  syncTimer: TimerHandle | undefined;
  /** When the group last became Empty (offset retention counts from it). */
  emptySince: number;
  /** Whether the registry's record says the group is empty (emptySince set) rather than in use. */
  emptySinceRecorded = true;
  /** Offset nodes known to exist in the registry (`topic/partition`), so commits need no reads. */
  readonly knownOffsetNodes = new Set<string>();
  /** Writes of the group's registry record, one at a time and in order. */
  recordWrites: Promise<void> = Promise.resolve();

  constructor(
    readonly groupId: string,
    now: number,
  ) {
    this.emptySince = now;
  }

  is(...states: GroupStateName[]): boolean {
    return states.includes(this.state);
  }

  get(memberId: string): Member | undefined {
    return this.members.get(memberId);
  }

  add(member: Member): void {
    if (this.members.size === 0) this.protocolType = member.protocolType;
    this.members.set(member.memberId, member);
    this.leaderId ??= member.memberId;
    if (member.groupInstanceId !== null) this.staticMembers.set(member.groupInstanceId, member.memberId);
  }

  remove(memberId: string): Member | undefined {
    const member = this.members.get(memberId);
    if (member === undefined) return undefined;
    this.members.delete(memberId);
    member.sessionTimer?.cancel();
    member.sessionTimer = undefined;
    if (member.groupInstanceId !== null && this.staticMembers.get(member.groupInstanceId) === memberId) this.staticMembers.delete(member.groupInstanceId);
    this.pendingSync.delete(memberId);
    if (this.leaderId === memberId) this.leaderId = this.members.keys().next().value ?? null;
    return member;
  }

  /** A static member's new member id replaces its old one (KIP-345); returns the member. */
  replaceStaticMember(groupInstanceId: string, oldMemberId: string, newMemberId: string): Member | undefined {
    const member = this.members.get(oldMemberId);
    if (member === undefined) return undefined;
    // Re-keyed in place of the old id, so join order (and leadership fallback) is kept.
    const entries = [...this.members.entries()].map(([id, value]): [string, Member] => (id === oldMemberId ? [newMemberId, value] : [id, value]));
    this.members.clear();
    for (const [id, value] of entries) this.members.set(id, value);
    member.memberId = newMemberId;
    this.staticMembers.set(groupInstanceId, newMemberId);
    if (this.leaderId === oldMemberId) this.leaderId = newMemberId;
    if (this.pendingSync.delete(oldMemberId)) this.pendingSync.add(newMemberId);
    return member;
  }

  awaitingJoinCount(): number {
    let count = 0;
    for (const member of this.members.values()) if (member.awaitingJoin !== undefined) count += 1;
    return count;
  }

  hasAllMembersJoined(): boolean {
    return this.awaitingJoinCount() === this.members.size && this.pendingMembers.size === 0;
  }

  /** The longest rebalance timeout of the members: how long a rebalance waits for them. */
  rebalanceTimeoutMs(): number {
    let longest = 0;
    for (const member of this.members.values()) longest = Math.max(longest, member.rebalanceTimeoutMs);
    return longest;
  }

  /** Protocols every member supports. */
  candidateProtocols(): Set<string> {
    let candidates: Set<string> | undefined;
    for (const member of this.members.values()) {
      const names = new Set(member.protocols.map((protocol) => protocol.name));
      candidates = candidates === undefined ? names : new Set([...candidates].filter((name) => names.has(name)));
    }
    return candidates ?? new Set();
  }

  /**
   * Whether a member with these protocols may join: any protocol type and protocols into an Empty
   * group (as long as there are some); otherwise the group's type and a protocol every member has.
   */
  supportsProtocols(protocolType: string, protocols: readonly MemberProtocol[]): boolean {
    if (this.is('Empty')) return protocolType !== '' && protocols.length > 0;
    if (protocolType !== this.protocolType) return false;
    const candidates = this.candidateProtocols();
    return protocols.some((protocol) => candidates.has(protocol.name));
  }

  /** Kafka's selectProtocol: each member votes for its first candidate; most votes wins (ties: the leader's order). */
  selectProtocol(): string | null {
    const candidates = this.candidateProtocols();
    const votes = new Map<string, number>();
    for (const member of this.members.values()) {
      const vote = member.vote(candidates);
      if (vote !== undefined) votes.set(vote, (votes.get(vote) ?? 0) + 1);
    }
    const leader = this.leaderId === null ? undefined : this.members.get(this.leaderId);
    const preference = (name: string): number => {
      const index = leader?.protocols.findIndex((protocol) => protocol.name === name) ?? -1;
      return index < 0 ? Number.MAX_SAFE_INTEGER : index;
    };
    let best: string | null = null;
    let bestVotes = -1;
    for (const [name, count] of votes) {
      if (count > bestVotes || (count === bestVotes && best !== null && preference(name) < preference(best))) {
        best = name;
        bestVotes = count;
      }
    }
    return best;
  }

  /** The leader's view of the members: each with its metadata for the chosen protocol. */
  memberList(): JoinOutcome['members'] {
    const protocol = this.protocolName ?? '';
    return [...this.members.values()].map((member) => ({ memberId: member.memberId, groupInstanceId: member.groupInstanceId, metadata: member.metadataFor(protocol) }));
  }
}
