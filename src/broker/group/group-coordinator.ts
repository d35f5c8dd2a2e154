/**
 * The classic-protocol group coordinator (kafka-clients.md §3; Kafka's GroupCoordinator): the
 * state machine of every group this broker coordinates, its timers, and its committed offsets
 * in the paper's offset registry (coordination/group-registry.ts).
 *
 * - Which broker coordinates a group follows from the live broker registry
 *   (coordinator-placement.ts); a group that moves away is dropped from memory and its parked
 *   requests answered NOT_COORDINATOR, so members find the new coordinator and rejoin there.
 * - Membership lives in memory only; offsets and the group's record (kind, protocol type, when it
 *   became empty) live in the registry. A new coordinator therefore starts the group Empty: its
 *   members rejoin (their old member ids get UNKNOWN_MEMBER_ID) and resume from the committed
 *   offsets. A commit is acknowledged only once the registry has it.
 * - Offsets of a group that has been Empty for offsets.retention.minutes are removed, and so are
 *   the offsets of a group that never had members once each is that old (KIP-211).
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from '../../common/logger.js';
import {
  claimGroup,
  deleteGroup,
  deleteOffsets,
  groupKindConflict,
  listGroupIds,
  liveZooKeeperMembers,
  readGroupRecord,
  readOffsets,
  writeGroupRecord,
  writeOffsets,
  type CommittedOffset,
  type OffsetEntry,
} from '../../coordination/group-registry.js';
import type { CoordinationStore } from '../../coordination/store.js';
import { pathSegment } from '../../coordination/paths.js';
import { KafkaErrorCode } from '../../protocol/kafka-errors.js';
import { coordinatorFor } from './coordinator-placement.js';
import { Group, Member, type GroupStateName, type JoinOutcome, type MemberProtocol, type SyncOutcome, type TimerHandle } from './group.js';

export interface GroupSettings {
  readonly minSessionTimeoutMs: number;
  readonly maxSessionTimeoutMs: number;
  readonly initialRebalanceDelayMs: number;
  readonly maxSize: number;
  readonly maxMetadataBytes: number;
  readonly retentionMs: number;
  readonly retentionCheckIntervalMs: number;
}

export interface Scheduler {
  now(): number;
  schedule(milliseconds: number, task: () => void): TimerHandle;
}

export const realScheduler: Scheduler = {
  now: () => Date.now(),
  schedule(milliseconds, task) {
    const timer = setTimeout(task, milliseconds);
    timer.unref();
    return { cancel: () => clearTimeout(timer) };
  },
};

export interface GroupCoordinatorOptions {
  readonly brokerId: number;
  readonly store: CoordinationStore;
  readonly settings: GroupSettings;
  /** The ids of the brokers registered as live right now (this one included). */
  readonly liveBrokerIds: () => readonly number[];
  /** Whether the partition exists: commits to unknown partitions are refused, as Kafka does. */
  readonly partitionExists: (topic: string, partition: number) => boolean;
  readonly logger: Logger;
  readonly scheduler?: Scheduler;
}

export interface JoinRequest {
  readonly groupId: string;
  readonly memberId: string;
  readonly groupInstanceId: string | null;
  /** JoinGroup v4+: a new member without an instance id first gets MEMBER_ID_REQUIRED (KIP-394). */
  readonly requireKnownMemberId: boolean;
  readonly clientId: string;
  readonly clientHost: string;
  readonly rebalanceTimeoutMs: number;
  readonly sessionTimeoutMs: number;
  readonly protocolType: string;
  readonly protocols: readonly MemberProtocol[];
}

export interface SyncRequest {
  readonly groupId: string;
  readonly generationId: number;
  readonly memberId: string;
  readonly groupInstanceId: string | null;
  readonly assignments: readonly { readonly memberId: string; readonly assignment: Buffer }[];
}

export interface MemberIdentity {
  readonly memberId: string;
  readonly groupInstanceId: string | null;
}

export interface CommitRequest {
  readonly groupId: string;
  readonly generationId: number;
  readonly memberId: string;
  readonly groupInstanceId: string | null;
  /** OffsetCommit v2–4: a retention of the commit's own, or -1 for the broker's. */
  readonly retentionTimeMs: number;
  readonly offsets: readonly { readonly topic: string; readonly partition: number; readonly offset: bigint; readonly leaderEpoch: number; readonly metadata: string | null }[];
}

export interface FetchedOffset {
  readonly topic: string;
  readonly partition: number;
  readonly offset: bigint;
  readonly leaderEpoch: number;
  readonly metadata: string;
  readonly errorCode: number;
}

export interface GroupDescription {
  readonly groupId: string;
  readonly errorCode: number;
  readonly state: GroupStateName | '';
  readonly protocolType: string;
  readonly protocol: string;
  readonly members: readonly {
    readonly memberId: string;
    readonly groupInstanceId: string | null;
    readonly clientId: string;
    readonly clientHost: string;
    readonly metadata: Buffer;
    readonly assignment: Buffer;
  }[];
}

/** How long a member that joined during a rebalance may wait without heartbeating (Kafka's NewMemberJoinTimeoutMs). */
const NEW_MEMBER_JOIN_TIMEOUT_MS = 5 * 60_000;
const NO_BYTES = Buffer.alloc(0);

type Loaded = { readonly group: Group } | { readonly errorCode: number };

/**
 * Whether a client's group id can name a group here: not empty (Kafka's INVALID_GROUP_ID) and
 * usable as one segment of the registry's paths (no '/', no control characters, not '.' or '..').
 * Any other id is answered INVALID_GROUP_ID, which clients do not retry; reading the registry with
 * it would fail on every request, be answered COORDINATOR_NOT_AVAILABLE (retriable: a client would
 * retry for ever) and log a warning each time (the fuzz run found it).
 */
export function usableGroupId(groupId: string): boolean {
  try {
    pathSegment('consumer group', groupId);
    return true;
  } catch {
    return false;
  }
}

export class GroupCoordinator {
  private readonly groups = new Map<string, Group>();
  private readonly loading = new Map<string, Promise<Loaded>>();
  private readonly scheduler: Scheduler;
  private retentionTimer: TimerHandle | undefined;
  private placementCache = new Map<string, number | undefined>();
  private stopped = false;

  constructor(private readonly options: GroupCoordinatorOptions) {
    this.scheduler = options.scheduler ?? realScheduler;
  }

  start(): void {
    this.scheduleRetention();
  }

  stop(): void {
    this.stopped = true;
    this.placementCache = new Map();
    this.retentionTimer?.cancel();
    for (const group of [...this.groups.values()]) this.unload(group, KafkaErrorCode.NOT_COORDINATOR);
  }

  /** The broker that coordinates `groupId` now (for FindCoordinator). */
  coordinatorOf(groupId: string): number | undefined {
    if (!this.placementCache.has(groupId)) {
      if (this.placementCache.size > 100_000) this.placementCache.clear();
      // A stopping broker already points its groups at the broker that takes them over.
      const live = this.options.liveBrokerIds().filter((id) => !this.stopped || id !== this.options.brokerId);
      this.placementCache.set(groupId, coordinatorFor(groupId, live));
    }
    return this.placementCache.get(groupId);
  }

  isCoordinatorFor(groupId: string): boolean {
    return this.coordinatorOf(groupId) === this.options.brokerId;
  }

  /** The live brokers changed: groups that now hash to another broker leave this one. */
  brokersChanged(): void {
    this.placementCache = new Map();
    for (const group of [...this.groups.values()]) {
      if (!this.isCoordinatorFor(group.groupId)) {
        this.options.logger.info({ group: group.groupId, coordinator: this.coordinatorOf(group.groupId) }, 'group moved to another coordinator');
        this.unload(group, KafkaErrorCode.NOT_COORDINATOR);
      }
    }
  }

  // ---------------------------------------------------------------- JoinGroup

  async join(request: JoinRequest): Promise<JoinOutcome> {
    const { settings } = this.options;
    if (!usableGroupId(request.groupId)) return joinError(request.memberId, KafkaErrorCode.INVALID_GROUP_ID);
    if (request.sessionTimeoutMs < settings.minSessionTimeoutMs || request.sessionTimeoutMs > settings.maxSessionTimeoutMs) {
      return joinError(request.memberId, KafkaErrorCode.INVALID_SESSION_TIMEOUT);
    }
    const isUnknownMember = request.memberId === '';
    const loaded = await this.load(request.groupId, isUnknownMember);
    if ('errorCode' in loaded) return joinError(request.memberId, membershipError(loaded.errorCode));
    const { group } = loaded;
    if (group.is('Dead')) return joinError(request.memberId, KafkaErrorCode.COORDINATOR_NOT_AVAILABLE);
    if (!this.acceptJoiningMember(group, request.memberId)) {
      const member = group.get(request.memberId);
      if (member !== undefined) this.removeMemberAndUpdateGroup(group, member, 'the group reached group.max.size');
      return joinError(request.memberId, KafkaErrorCode.GROUP_MAX_SIZE_REACHED);
    }
    if (!group.supportsProtocols(request.protocolType, request.protocols)) return joinError(request.memberId, KafkaErrorCode.INCONSISTENT_GROUP_PROTOCOL);
    return isUnknownMember ? this.joinNewMember(group, request) : this.joinCurrentMember(group, request);
  }

  private acceptJoiningMember(group: Group, memberId: string): boolean {
    const { maxSize } = this.options.settings;
    switch (group.state) {
      case 'Empty':
      case 'Dead':
        return true;
      case 'PreparingRebalance':
        return group.get(memberId)?.awaitingJoin !== undefined || group.awaitingJoinCount() < maxSize;
      case 'CompletingRebalance':
      case 'Stable':
        return group.members.has(memberId) || group.members.size < maxSize;
    }
  }

  private joinNewMember(group: Group, request: JoinRequest): Promise<JoinOutcome> {
    const memberId = `${request.clientId}-${randomUUID()}`;
    if (request.groupInstanceId !== null) return this.joinStaticMember(group, request, memberId);
    if (request.requireKnownMemberId) {
      // KIP-394: the member must come back with this id; until then it is pending, and expires.
      group.pendingMembers.set(
        memberId,
        this.scheduler.schedule(request.sessionTimeoutMs, () => this.expirePendingMember(group, memberId)),
      );
      return Promise.resolve(joinError(memberId, KafkaErrorCode.MEMBER_ID_REQUIRED));
    }
    return this.addMemberAndRebalance(group, request, memberId);
  }

  private joinStaticMember(group: Group, request: JoinRequest, newMemberId: string): Promise<JoinOutcome> {
    const instanceId = request.groupInstanceId ?? '';
    const oldMemberId = group.staticMembers.get(instanceId);
    if (oldMemberId === undefined) return this.addMemberAndRebalance(group, request, newMemberId);
    const old = group.get(oldMemberId);
    if (old === undefined) return this.addMemberAndRebalance(group, request, newMemberId);
    // The restarted instance takes over: whatever the old member id had parked is fenced.
    const fenced = joinError(oldMemberId, KafkaErrorCode.FENCED_INSTANCE_ID);
    const parkedJoin = old.awaitingJoin;
    const parkedSync = old.awaitingSync;
    old.awaitingJoin = undefined;
    old.awaitingSync = undefined;
    parkedJoin?.(fenced);
    parkedSync?.({ errorCode: KafkaErrorCode.FENCED_INSTANCE_ID, assignment: NO_BYTES });
    const leaderBefore = group.leaderId;
    const member = group.replaceStaticMember(instanceId, oldMemberId, newMemberId);
    if (member === undefined) return this.addMemberAndRebalance(group, request, newMemberId);
    const outcome = this.parkJoin(member);
    this.updateMember(member, request);
    this.scheduleSessionExpiry(group, member);
    switch (group.state) {
      case 'Stable': {
        if (group.protocolName !== null && group.selectProtocol() === group.protocolName) {
          // KIP-345: a static member coming back with unchanged protocols keeps its assignment, no
          // rebalance. As in Kafka it is told the leader from before, so even a restarted leader
          // acts as a follower: its SyncGroup just fetches the assignment it had.
          this.answerJoin(member, { ...this.currentJoinOutcome(group, member), leader: leaderBefore ?? '', members: [] });
        } else {
          this.maybePrepareRebalance(group, `static member ${instanceId} rejoined with other protocols`);
        }
        break;
      }
      case 'CompletingRebalance':
        this.answerJoin(member, this.currentJoinOutcome(group, member));
        break;
      case 'PreparingRebalance':
      case 'Empty':
      case 'Dead':
        // The parked join completes with the rebalance (Empty and Dead hold no static member).
        this.tryCompleteJoin(group);
        break;
    }
    return outcome;
  }

  private joinCurrentMember(group: Group, request: JoinRequest): Promise<JoinOutcome> {
    const { memberId } = request;
    if (group.pendingMembers.has(memberId)) {
      if (request.groupInstanceId !== null) return Promise.resolve(joinError(memberId, KafkaErrorCode.UNKNOWN_MEMBER_ID));
      return this.addMemberAndRebalance(group, request, memberId);
    }
    const invalid = this.validateCurrentMember(group, memberId, request.groupInstanceId);
    if (invalid !== undefined) return Promise.resolve(joinError(memberId, invalid));
    const member = group.get(memberId);
    if (member === undefined) return Promise.resolve(joinError(memberId, KafkaErrorCode.UNKNOWN_MEMBER_ID));
    switch (group.state) {
      case 'PreparingRebalance':
        return this.updateMemberAndRebalance(group, member, request, `member ${memberId} rejoined`);
      case 'CompletingRebalance':
        if (member.matches(request.protocols)) {
          // A repeated join (its answer was lost): answer with the current generation.
          this.scheduleSessionExpiry(group, member);
          return Promise.resolve(this.currentJoinOutcome(group, member));
        }
        return this.updateMemberAndRebalance(group, member, request, `member ${memberId} rejoined with other protocols`);
      case 'Stable':
        if (group.leaderId === memberId || !member.matches(request.protocols)) {
          // The leader rejoins to make the group rebalance (e.g. its subscribed topics changed).
          return this.updateMemberAndRebalance(group, member, request, `leader ${memberId} rejoined, or protocols changed`);
        }
        this.scheduleSessionExpiry(group, member);
        return Promise.resolve(this.currentJoinOutcome(group, member));
      case 'Empty':
      case 'Dead':
        return Promise.resolve(joinError(memberId, KafkaErrorCode.UNKNOWN_MEMBER_ID));
    }
  }

  private addMemberAndRebalance(group: Group, request: JoinRequest, memberId: string): Promise<JoinOutcome> {
    const member = new Member(
      memberId,
      request.groupInstanceId,
      request.clientId,
      request.clientHost,
      request.rebalanceTimeoutMs,
      request.sessionTimeoutMs,
      request.protocolType,
      request.protocols,
    );
    member.isNew = true;
    if (group.is('PreparingRebalance') && group.generationId === 0) group.newMemberAdded = true;
    group.add(member);
    group.pendingMembers.get(memberId)?.cancel();
    group.pendingMembers.delete(memberId);
    const outcome = this.parkJoin(member);
    this.scheduleSessionExpiry(group, member, NEW_MEMBER_JOIN_TIMEOUT_MS);
    this.maybePrepareRebalance(group, `member ${memberId} joined`);
    this.tryCompleteJoin(group);
    return outcome;
  }

  private updateMemberAndRebalance(group: Group, member: Member, request: JoinRequest, reason: string): Promise<JoinOutcome> {
    const outcome = this.parkJoin(member);
    this.updateMember(member, request);
    this.maybePrepareRebalance(group, reason);
    this.tryCompleteJoin(group);
    return outcome;
  }

  private updateMember(member: Member, request: JoinRequest): void {
    member.protocols = request.protocols;
    member.rebalanceTimeoutMs = request.rebalanceTimeoutMs;
    member.sessionTimeoutMs = request.sessionTimeoutMs;
    member.clientId = request.clientId;
    member.clientHost = request.clientHost;
  }

  /** Parks the member's join; a join it had parked before (a retry on a new connection) is answered first. */
  private parkJoin(member: Member): Promise<JoinOutcome> {
    const previous = member.awaitingJoin;
    member.awaitingJoin = undefined;
    previous?.(joinError(member.memberId, KafkaErrorCode.REBALANCE_IN_PROGRESS));
    return new Promise((resolve) => {
      member.awaitingJoin = resolve;
    });
  }

  private answerJoin(member: Member, outcome: JoinOutcome): void {
    const callback = member.awaitingJoin;
    member.awaitingJoin = undefined;
    callback?.(outcome);
  }

  private currentJoinOutcome(group: Group, member: Member): JoinOutcome {
    return {
      errorCode: KafkaErrorCode.NONE,
      generationId: group.generationId,
      protocolName: group.protocolName ?? '',
      leader: group.leaderId ?? '',
      memberId: member.memberId,
      members: group.leaderId === member.memberId ? group.memberList() : [],
    };
  }

  private maybePrepareRebalance(group: Group, reason: string): void {
    if (group.is('Stable', 'CompletingRebalance', 'Empty')) this.prepareRebalance(group, reason);
  }

  private prepareRebalance(group: Group, reason: string): void {
    if (group.is('CompletingRebalance')) this.propagateAssignmentError(group, KafkaErrorCode.REBALANCE_IN_PROGRESS);
    group.syncTimer?.cancel();
    group.syncTimer = undefined;
    group.pendingSync.clear();
    const wasEmpty = group.is('Empty');
    group.state = 'PreparingRebalance';
    this.options.logger.info({ group: group.groupId, generation: group.generationId, reason }, 'preparing to rebalance group');
    group.joinTimer?.cancel();
    const rebalanceTimeout = group.rebalanceTimeoutMs();
    if (wasEmpty && this.options.settings.initialRebalanceDelayMs > 0) {
      // group.initial.rebalance.delay.ms: the first members of an empty group wait for the others.
      group.initialDelayActive = true;
      group.newMemberAdded = false;
      this.scheduleInitialDelay(group, this.options.settings.initialRebalanceDelayMs, Math.max(rebalanceTimeout - this.options.settings.initialRebalanceDelayMs, 0));
    } else {
      group.joinTimer = this.scheduler.schedule(rebalanceTimeout, () => this.completeJoin(group));
    }
  }

  private scheduleInitialDelay(group: Group, delay: number, remaining: number): void {
    group.joinTimer = this.scheduler.schedule(delay, () => {
      if (!this.isCurrent(group) || !group.is('PreparingRebalance')) return;
      if (group.newMemberAdded && remaining > 0) {
        group.newMemberAdded = false;
        const next = Math.min(this.options.settings.initialRebalanceDelayMs, remaining);
        this.scheduleInitialDelay(group, next, remaining - next);
        return;
      }
      group.initialDelayActive = false;
      this.completeJoin(group);
    });
  }

  private tryCompleteJoin(group: Group): void {
    if (group.is('PreparingRebalance') && !group.initialDelayActive && group.hasAllMembersJoined()) this.completeJoin(group);
  }

  /** The rebalance window closed (everyone joined, or the rebalance timeout passed): next generation. */
  private completeJoin(group: Group): void {
    if (!this.isCurrent(group) || !group.is('PreparingRebalance')) return;
    group.joinTimer?.cancel();
    group.joinTimer = undefined;
    group.initialDelayActive = false;
    for (const member of [...group.members.values()]) {
      if (member.awaitingJoin === undefined) {
        this.options.logger.info({ group: group.groupId, member: member.memberId }, 'member did not rejoin within the rebalance timeout; removed');
        this.dropMember(group, member, KafkaErrorCode.UNKNOWN_MEMBER_ID);
      }
    }
    const wasEmptyGeneration = group.members.size > 0 && group.emptySinceRecorded;
    group.generationId += 1;
    if (group.members.size === 0) {
      group.protocolName = null;
      group.state = 'Empty';
      group.emptySince = this.scheduler.now();
      group.emptySinceRecorded = true;
      this.options.logger.info({ group: group.groupId, generation: group.generationId }, 'group is now empty');
      this.persistRecord(group);
      return;
    }
    group.protocolName = group.selectProtocol();
    group.state = 'CompletingRebalance';
    if (wasEmptyGeneration) {
      group.emptySinceRecorded = false;
      this.persistRecord(group);
    }
    for (const member of group.members.values()) group.pendingSync.add(member.memberId);
    const generation = group.generationId;
    group.syncTimer = this.scheduler.schedule(group.rebalanceTimeoutMs(), () => this.expirePendingSync(group, generation));
    this.options.logger.info({ group: group.groupId, generation, protocol: group.protocolName, members: group.members.size, leader: group.leaderId }, 'group rebalanced; waiting for the leader to assign');
    for (const member of group.members.values()) {
      this.answerJoin(member, this.currentJoinOutcome(group, member));
      member.isNew = false;
      this.scheduleSessionExpiry(group, member);
    }
  }

  // ---------------------------------------------------------------- SyncGroup

  async sync(request: SyncRequest): Promise<SyncOutcome> {
    if (!usableGroupId(request.groupId)) return syncError(KafkaErrorCode.INVALID_GROUP_ID);
    const loaded = await this.load(request.groupId, false);
    if ('errorCode' in loaded) return syncError(membershipError(loaded.errorCode));
    const { group } = loaded;
    if (group.is('Dead')) return syncError(KafkaErrorCode.COORDINATOR_NOT_AVAILABLE);
    const invalid = this.validateCurrentMember(group, request.memberId, request.groupInstanceId);
    if (invalid !== undefined) return syncError(invalid);
    if (request.generationId !== group.generationId) return syncError(KafkaErrorCode.ILLEGAL_GENERATION);
    const member = group.get(request.memberId);
    if (member === undefined) return syncError(KafkaErrorCode.UNKNOWN_MEMBER_ID);
    switch (group.state) {
      case 'Empty':
        return syncError(KafkaErrorCode.UNKNOWN_MEMBER_ID);
      case 'PreparingRebalance':
        return syncError(KafkaErrorCode.REBALANCE_IN_PROGRESS);
      case 'Stable':
        group.pendingSync.delete(member.memberId);
        this.scheduleSessionExpiry(group, member);
        return { errorCode: KafkaErrorCode.NONE, assignment: member.assignment };
      case 'CompletingRebalance': {
        group.pendingSync.delete(member.memberId);
        const previous = member.awaitingSync;
        member.awaitingSync = undefined;
        previous?.(syncError(KafkaErrorCode.REBALANCE_IN_PROGRESS));
        const outcome = new Promise<SyncOutcome>((resolve) => {
          member.awaitingSync = resolve;
        });
        this.scheduleSessionExpiry(group, member);
        if (group.leaderId === member.memberId) {
          const assigned = new Map(request.assignments.map((entry) => [entry.memberId, entry.assignment]));
          // Members the leader left out get an empty assignment, as in Kafka.
          for (const each of group.members.values()) each.assignment = assigned.get(each.memberId) ?? NO_BYTES;
          this.propagateAssignment(group);
          group.state = 'Stable';
          this.options.logger.info({ group: group.groupId, generation: group.generationId, members: group.members.size }, 'group is stable');
        }
        return outcome;
      }
      case 'Dead':
        return syncError(KafkaErrorCode.COORDINATOR_NOT_AVAILABLE);
    }
  }

  private propagateAssignment(group: Group): void {
    for (const member of group.members.values()) {
      const callback = member.awaitingSync;
      if (callback === undefined) continue;
      member.awaitingSync = undefined;
      callback({ errorCode: KafkaErrorCode.NONE, assignment: member.assignment });
      this.scheduleSessionExpiry(group, member);
    }
  }

  private propagateAssignmentError(group: Group, errorCode: number): void {
    for (const member of group.members.values()) {
      member.assignment = NO_BYTES;
      const callback = member.awaitingSync;
      if (callback === undefined) continue;
      member.awaitingSync = undefined;
      callback(syncError(errorCode));
      this.scheduleSessionExpiry(group, member);
    }
  }

  /** Members that never sent SyncGroup within the rebalance timeout are removed, and the group rebalances. */
  private expirePendingSync(group: Group, generation: number): void {
    if (!this.isCurrent(group) || group.generationId !== generation || !group.is('CompletingRebalance', 'Stable')) return;
    if (group.pendingSync.size === 0) return;
    for (const memberId of [...group.pendingSync]) {
      const member = group.get(memberId);
      if (member !== undefined) this.dropMember(group, member, KafkaErrorCode.UNKNOWN_MEMBER_ID);
    }
    this.prepareRebalance(group, 'members did not send SyncGroup within the rebalance timeout');
    this.tryCompleteJoin(group);
  }

  // ---------------------------------------------------------------- Heartbeat, LeaveGroup

  async heartbeat(request: { groupId: string; memberId: string; groupInstanceId: string | null; generationId: number }): Promise<number> {
    if (!usableGroupId(request.groupId)) return KafkaErrorCode.INVALID_GROUP_ID;
    const loaded = await this.load(request.groupId, false);
    if ('errorCode' in loaded) return membershipError(loaded.errorCode);
    const { group } = loaded;
    if (group.is('Dead')) return KafkaErrorCode.COORDINATOR_NOT_AVAILABLE;
    const invalid = this.validateCurrentMember(group, request.memberId, request.groupInstanceId);
    if (invalid !== undefined) return invalid;
    if (request.generationId !== group.generationId) return KafkaErrorCode.ILLEGAL_GENERATION;
    const member = group.get(request.memberId);
    if (member === undefined || group.is('Empty')) return KafkaErrorCode.UNKNOWN_MEMBER_ID;
    this.scheduleSessionExpiry(group, member);
    return group.is('PreparingRebalance') ? KafkaErrorCode.REBALANCE_IN_PROGRESS : KafkaErrorCode.NONE;
  }

  async leave(groupId: string, leaving: readonly MemberIdentity[]): Promise<{ errorCode: number; members: { memberId: string; groupInstanceId: string | null; errorCode: number }[] }> {
    if (!usableGroupId(groupId)) return { errorCode: KafkaErrorCode.INVALID_GROUP_ID, members: [] };
    const loaded = await this.load(groupId, false);
    if ('errorCode' in loaded) {
      if (loaded.errorCode !== KafkaErrorCode.GROUP_ID_NOT_FOUND) return { errorCode: loaded.errorCode, members: [] };
      return { errorCode: KafkaErrorCode.NONE, members: leaving.map((member) => ({ ...member, errorCode: KafkaErrorCode.UNKNOWN_MEMBER_ID })) };
    }
    const { group } = loaded;
    if (group.is('Dead')) return { errorCode: KafkaErrorCode.COORDINATOR_NOT_AVAILABLE, members: [] };
    const members = leaving.map((identity) => {
      let memberId = identity.memberId;
      if (memberId === '' && identity.groupInstanceId !== null) {
        // KIP-345: an admin removes a static member by its instance id alone.
        const current = group.staticMembers.get(identity.groupInstanceId);
        if (current === undefined) return { ...identity, errorCode: KafkaErrorCode.UNKNOWN_MEMBER_ID };
        memberId = current;
      } else if (group.pendingMembers.has(memberId) && identity.groupInstanceId === null) {
        group.pendingMembers.get(memberId)?.cancel();
        group.pendingMembers.delete(memberId);
        this.tryCompleteJoin(group);
        return { ...identity, errorCode: KafkaErrorCode.NONE };
      } else {
        const invalid = this.validateCurrentMember(group, memberId, identity.groupInstanceId);
        if (invalid !== undefined) return { ...identity, errorCode: invalid };
      }
      const member = group.get(memberId);
      if (member === undefined) return { ...identity, errorCode: KafkaErrorCode.UNKNOWN_MEMBER_ID };
      this.removeMemberAndUpdateGroup(group, member, `member ${memberId} left`);
      return { ...identity, errorCode: KafkaErrorCode.NONE };
    });
    return { errorCode: KafkaErrorCode.NONE, members };
  }

  // ---------------------------------------------------------------- membership helpers

  /** Kafka's validateCurrentMember: a static member must hold its instance id; a dynamic one must exist. */
  private validateCurrentMember(group: Group, memberId: string, groupInstanceId: string | null): number | undefined {
    if (groupInstanceId !== null) {
      const current = group.staticMembers.get(groupInstanceId);
      if (current === undefined) return KafkaErrorCode.UNKNOWN_MEMBER_ID;
      if (current !== memberId) return KafkaErrorCode.FENCED_INSTANCE_ID;
      return undefined;
    }
    return group.members.has(memberId) ? undefined : KafkaErrorCode.UNKNOWN_MEMBER_ID;
  }

  /** Resets the member's session timer; it fires unless a heartbeat (or other request) comes first. */
  private scheduleSessionExpiry(group: Group, member: Member, timeoutMs = member.sessionTimeoutMs): void {
    member.sessionTimer?.cancel();
    member.sessionTimer = this.scheduler.schedule(timeoutMs, () => {
      if (!this.isCurrent(group) || group.get(member.memberId) !== member) return;
      // A member parked in a rebalance stays (its timer restarts when the rebalance answers it),
      // unless it joined during this rebalance and never came back (Kafka's isNew).
      if (!member.isNew && (member.awaitingJoin !== undefined || member.awaitingSync !== undefined)) return;
      this.options.logger.info({ group: group.groupId, member: member.memberId, sessionTimeoutMs: member.sessionTimeoutMs }, 'member session expired; removing it');
      this.removeMemberAndUpdateGroup(group, member, `member ${member.memberId} session expired`);
    });
  }

  private expirePendingMember(group: Group, memberId: string): void {
    if (!this.isCurrent(group) || !group.pendingMembers.delete(memberId)) return;
    this.tryCompleteJoin(group);
  }

  /** Removes a member (its parked requests answered with `errorCode`), without rebalancing. */
  private dropMember(group: Group, member: Member, errorCode: number): void {
    const join = member.awaitingJoin;
    const sync = member.awaitingSync;
    member.awaitingJoin = undefined;
    member.awaitingSync = undefined;
    group.remove(member.memberId);
    join?.(joinError(member.memberId, errorCode));
    sync?.(syncError(errorCode));
  }

  private removeMemberAndUpdateGroup(group: Group, member: Member, reason: string): void {
    this.dropMember(group, member, KafkaErrorCode.UNKNOWN_MEMBER_ID);
    if (group.is('Stable', 'CompletingRebalance')) this.prepareRebalance(group, reason);
    this.tryCompleteJoin(group);
  }

  // ---------------------------------------------------------------- OffsetCommit, OffsetFetch

  async commitOffsets(request: CommitRequest): Promise<number[]> {
    const everyone = (errorCode: number): number[] => request.offsets.map(() => errorCode);
    if (!usableGroupId(request.groupId)) return everyone(KafkaErrorCode.INVALID_GROUP_ID);
    const simple = request.generationId < 0;
    const loaded = await this.load(request.groupId, simple);
    if ('errorCode' in loaded) return everyone(loaded.errorCode === KafkaErrorCode.GROUP_ID_NOT_FOUND ? KafkaErrorCode.ILLEGAL_GENERATION : loaded.errorCode);
    const { group } = loaded;
    const invalid = this.validateCommit(group, request);
    if (invalid !== undefined) return everyone(invalid);
    const member = group.get(request.memberId);
    if (member !== undefined && !simple) this.scheduleSessionExpiry(group, member);
    const now = this.scheduler.now();
    const { maxMetadataBytes } = this.options.settings;
    const errors = request.offsets.map(({ topic, partition, metadata }) => {
      if (!this.options.partitionExists(topic, partition)) return KafkaErrorCode.UNKNOWN_TOPIC_OR_PARTITION;
      if (metadata !== null && metadata.length > maxMetadataBytes) return KafkaErrorCode.OFFSET_METADATA_TOO_LARGE;
      return KafkaErrorCode.NONE;
    });
    const entries: OffsetEntry[] = [];
    request.offsets.forEach(({ topic, partition, offset, leaderEpoch, metadata }, index) => {
      if (errors[index] !== KafkaErrorCode.NONE) return;
      const value: CommittedOffset = {
        offset,
        leaderEpoch,
        metadata: metadata ?? '',
        commitTimestamp: now,
        ...(request.retentionTimeMs >= 0 ? { expireTimestamp: now + request.retentionTimeMs } : {}),
      };
      entries.push({ topic, partition, value });
    });
    if (entries.length === 0) return errors;
    try {
      await writeOffsets(this.options.store, group.groupId, entries, group.knownOffsetNodes);
    } catch (error) {
      this.options.logger.warn({ err: error, group: group.groupId, partitions: entries.length }, 'could not store committed offsets; the client will retry');
      return errors.map((code) => (code === KafkaErrorCode.NONE ? KafkaErrorCode.COORDINATOR_NOT_AVAILABLE : code));
    }
    return errors;
  }

  /** Kafka's validateOffsetCommit, then the state rule (no commits while CompletingRebalance). */
  private validateCommit(group: Group, request: CommitRequest): number | undefined {
    if (group.is('Dead')) return KafkaErrorCode.COORDINATOR_NOT_AVAILABLE;
    if (request.generationId < 0 && group.is('Empty')) return undefined;
    if (request.generationId >= 0 || request.memberId !== '' || request.groupInstanceId !== null) {
      const invalid = this.validateCurrentMember(group, request.memberId, request.groupInstanceId);
      if (invalid !== undefined) return invalid;
      if (request.generationId !== group.generationId) return KafkaErrorCode.ILLEGAL_GENERATION;
    } else if (!group.is('Empty')) {
      return KafkaErrorCode.UNKNOWN_MEMBER_ID;
    }
    return group.is('CompletingRebalance') ? KafkaErrorCode.REBALANCE_IN_PROGRESS : undefined;
  }

  /** Committed offsets (of the named partitions, or all when `topics` is null), read from the registry. */
  async fetchOffsets(groupId: string, topics: readonly { topic: string; partitions: readonly number[] }[] | null): Promise<{ errorCode: number; offsets: FetchedOffset[] }> {
    if (!usableGroupId(groupId)) return { errorCode: KafkaErrorCode.INVALID_GROUP_ID, offsets: [] };
    if (!this.isCoordinatorFor(groupId)) return { errorCode: KafkaErrorCode.NOT_COORDINATOR, offsets: [] };
    let stored: OffsetEntry[];
    try {
      stored = await readOffsets(this.options.store, groupId, topics?.map((entry) => entry.topic));
    } catch (error) {
      this.options.logger.warn({ err: error, group: groupId }, 'could not read committed offsets');
      return { errorCode: KafkaErrorCode.COORDINATOR_NOT_AVAILABLE, offsets: [] };
    }
    const found = new Map(stored.map((entry) => [`${entry.topic}/${entry.partition}`, entry.value]));
    const asFetched = (topic: string, partition: number, value: CommittedOffset | undefined): FetchedOffset => ({
      topic,
      partition,
      offset: value?.offset ?? -1n,
      leaderEpoch: value?.leaderEpoch ?? -1,
      metadata: value?.metadata ?? '',
      errorCode: KafkaErrorCode.NONE,
    });
    if (topics === null) return { errorCode: KafkaErrorCode.NONE, offsets: stored.map((entry) => asFetched(entry.topic, entry.partition, entry.value)) };
    return {
      errorCode: KafkaErrorCode.NONE,
      offsets: topics.flatMap(({ topic, partitions }) => partitions.map((partition) => asFetched(topic, partition, found.get(`${topic}/${partition}`)))),
    };
  }

  // ---------------------------------------------------------------- DescribeGroups, ListGroups, DeleteGroups

  async describe(groupId: string): Promise<GroupDescription> {
    const none = (errorCode: number, state: GroupStateName | ''): GroupDescription => ({ groupId, errorCode, state, protocolType: '', protocol: '', members: [] });
    if (!usableGroupId(groupId)) return none(KafkaErrorCode.INVALID_GROUP_ID, '');
    if (!this.isCoordinatorFor(groupId)) return none(KafkaErrorCode.NOT_COORDINATOR, '');
    const loaded = await this.load(groupId, false);
    if ('errorCode' in loaded) return loaded.errorCode === KafkaErrorCode.GROUP_ID_NOT_FOUND || loaded.errorCode === KafkaErrorCode.INCONSISTENT_GROUP_PROTOCOL ? none(KafkaErrorCode.NONE, 'Dead') : none(loaded.errorCode, '');
    const { group } = loaded;
    const stable = group.is('Stable');
    return {
      groupId,
      errorCode: KafkaErrorCode.NONE,
      state: group.state,
      protocolType: group.protocolType,
      protocol: stable ? (group.protocolName ?? '') : '',
      members: [...group.members.values()].map((member) => ({
        memberId: member.memberId,
        groupInstanceId: member.groupInstanceId,
        clientId: member.clientId,
        clientHost: member.clientHost,
        metadata: stable ? member.metadataFor(group.protocolName ?? '') : NO_BYTES,
        assignment: stable ? member.assignment : NO_BYTES,
      })),
    };
  }

  /** Every broker-coordinated group this broker coordinates, with its state and protocol type. */
  async list(): Promise<{ groupId: string; protocolType: string; state: GroupStateName }[]> {
    const listed = new Map<string, { groupId: string; protocolType: string; state: GroupStateName }>();
    for (const group of this.groups.values()) if (!group.is('Dead')) listed.set(group.groupId, { groupId: group.groupId, protocolType: group.protocolType, state: group.state });
    for (const groupId of await listGroupIds(this.options.store)) {
      if (listed.has(groupId) || !this.isCoordinatorFor(groupId)) continue;
      const found = await readGroupRecord(this.options.store, groupId).catch(() => undefined);
      if (found?.record.kind === 'broker') listed.set(groupId, { groupId, protocolType: found.record.protocolType, state: 'Empty' });
    }
    return [...listed.values()].sort((a, b) => (a.groupId < b.groupId ? -1 : 1));
  }

  async deleteGroup(groupId: string): Promise<number> {
    if (!usableGroupId(groupId)) return KafkaErrorCode.INVALID_GROUP_ID;
    if (!this.isCoordinatorFor(groupId)) return KafkaErrorCode.NOT_COORDINATOR;
    const found = await readGroupRecord(this.options.store, groupId).catch(() => 'unreadable' as const);
    if (found === 'unreadable') return KafkaErrorCode.COORDINATOR_NOT_AVAILABLE;
    if (found === undefined && !this.groups.has(groupId)) return KafkaErrorCode.GROUP_ID_NOT_FOUND;
    if (found?.record.kind === 'zookeeper') {
      // A paper-style group may be deleted once no consumer of it is alive (to reuse the id).
      const live = await liveZooKeeperMembers(this.options.store, groupId);
      if (live.length > 0) return KafkaErrorCode.NON_EMPTY_GROUP;
    } else {
      const group = this.groups.get(groupId);
      if (group !== undefined && !group.is('Empty', 'Dead')) return KafkaErrorCode.NON_EMPTY_GROUP;
      if (group?.is('Dead') === true) return KafkaErrorCode.GROUP_ID_NOT_FOUND;
      if (group !== undefined) {
        this.unload(group, KafkaErrorCode.COORDINATOR_NOT_AVAILABLE);
        // A record write still queued would fail on the deleted node: let it land first.
        await group.recordWrites;
      }
    }
    try {
      await deleteGroup(this.options.store, groupId);
    } catch (error) {
      this.options.logger.warn({ err: error, group: groupId }, 'could not delete the group from the registry');
      return KafkaErrorCode.COORDINATOR_NOT_AVAILABLE;
    }
    this.options.logger.info({ group: groupId }, 'group deleted');
    return KafkaErrorCode.NONE;
  }

  // ---------------------------------------------------------------- loading, unloading, persistence

  private isCurrent(group: Group): boolean {
    return !this.stopped && this.groups.get(group.groupId) === group && !group.is('Dead');
  }

  /**
   * The group in memory, loaded from the registry on first use (create: claim the id for a
   * broker group if nobody has it). Errors: NOT_COORDINATOR, GROUP_ID_NOT_FOUND (not created),
   * INCONSISTENT_GROUP_PROTOCOL (a paper-style group has the id), COORDINATOR_NOT_AVAILABLE.
   */
  private async load(groupId: string, create: boolean): Promise<Loaded> {
    if (!this.isCoordinatorFor(groupId)) return { errorCode: KafkaErrorCode.NOT_COORDINATOR };
    const inMemory = this.groups.get(groupId);
    if (inMemory !== undefined) return { group: inMemory };
    let pending = this.loading.get(groupId);
    if (pending === undefined) {
      pending = this.loadFromRegistry(groupId, create).finally(() => this.loading.delete(groupId));
      this.loading.set(groupId, pending);
    }
    const loaded = await pending;
    // A concurrent non-creating load may have found nothing while this one must create; or the
    // group was dropped (moved, deleted, expired) while loading: look again.
    const stale = ('errorCode' in loaded && loaded.errorCode === KafkaErrorCode.GROUP_ID_NOT_FOUND && create) || ('group' in loaded && this.groups.get(groupId) !== loaded.group);
    if (stale) {
      if (this.stopped || !this.isCoordinatorFor(groupId)) return { errorCode: KafkaErrorCode.NOT_COORDINATOR };
      return this.load(groupId, create);
    }
    return loaded;
  }

  private async loadFromRegistry(groupId: string, create: boolean): Promise<Loaded> {
    const now = this.scheduler.now();
    let found;
    try {
      found = await readGroupRecord(this.options.store, groupId);
      if (found === undefined) {
        if (!create) return { errorCode: KafkaErrorCode.GROUP_ID_NOT_FOUND };
        const live = await liveZooKeeperMembers(this.options.store, groupId);
        if (live.length > 0) found = { record: { kind: 'zookeeper' as const, protocolType: '', emptySince: null }, version: -1 };
        else found = await claimGroup(this.options.store, groupId, { kind: 'broker', protocolType: '', emptySince: now });
      }
    } catch (error) {
      this.options.logger.warn({ err: error, group: groupId }, 'could not read the group from the registry');
      return { errorCode: KafkaErrorCode.COORDINATOR_NOT_AVAILABLE };
    }
    if (found.record.kind === 'zookeeper') {
      this.options.logger.warn({ group: groupId }, groupKindConflict(groupId, 'zookeeper').message);
      return { errorCode: KafkaErrorCode.INCONSISTENT_GROUP_PROTOCOL };
    }
    if (this.stopped || !this.isCoordinatorFor(groupId)) return { errorCode: KafkaErrorCode.NOT_COORDINATOR };
    const existing = this.groups.get(groupId);
    if (existing !== undefined) return { group: existing };
    const group = new Group(groupId, found.record.emptySince ?? now);
    group.protocolType = found.record.protocolType;
    this.groups.set(groupId, group);
    // A record "in use" means its members were at a coordinator that is gone (another broker, or
    // this one before a restart); here the group starts Empty. Recorded as empty from now, so
    // offset retention counts from the takeover (as Kafka counts from when the old members
    // expire) even if nobody comes back; its next generation with members records it in use.
    if (found.record.emptySince === null) this.persistRecord(group);
    return { group };
  }

  /** Drops the group from memory: parked requests get `errorCode`, timers stop. */
  private unload(group: Group, errorCode: number): void {
    group.state = 'Dead';
    group.joinTimer?.cancel();
    group.syncTimer?.cancel();
    for (const timer of group.pendingMembers.values()) timer.cancel();
    group.pendingMembers.clear();
    for (const member of [...group.members.values()]) this.dropMember(group, member, errorCode);
    if (this.groups.get(group.groupId) === group) this.groups.delete(group.groupId);
  }

  /** Records in the registry when the group became empty (or that it has members), in order. */
  private persistRecord(group: Group): void {
    const record = { kind: 'broker' as const, protocolType: group.protocolType, emptySince: group.emptySinceRecorded ? group.emptySince : null };
    group.recordWrites = group.recordWrites
      .then(() => writeGroupRecord(this.options.store, group.groupId, record))
      .then(
        () => {},
        (error: unknown) => this.options.logger.warn({ err: error, group: group.groupId }, 'could not record the group state in the registry; offset retention may count from an older time'),
      );
  }

  // ---------------------------------------------------------------- offset retention

  private scheduleRetention(): void {
    if (this.stopped) return;
    this.retentionTimer = this.scheduler.schedule(this.options.settings.retentionCheckIntervalMs, () => {
      this.expireOffsets()
        .catch((error: unknown) => this.options.logger.warn({ err: error }, 'offset retention check failed; trying again at the next interval'))
        .finally(() => this.scheduleRetention());
    });
  }

  /** One pass of offsets.retention.minutes over the groups this broker coordinates. */
  async expireOffsets(): Promise<void> {
    const now = this.scheduler.now();
    const { retentionMs, retentionCheckIntervalMs } = this.options.settings;
    for (const groupId of await listGroupIds(this.options.store)) {
      if (this.stopped) return;
      if (!this.isCoordinatorFor(groupId)) continue;
      let inMemory = this.groups.get(groupId);
      if (inMemory !== undefined && !inMemory.is('Empty')) continue;
      const found = await readGroupRecord(this.options.store, groupId);
      if (found?.record.kind !== 'broker') continue;
      if (inMemory === undefined && found.record.emptySince === null) {
        // "In use", but not here: its members were at a coordinator that is gone. Loading it
        // records it as empty from now (loadFromRegistry), so its offsets do not live forever.
        const loaded = await this.load(groupId, false);
        if (!('group' in loaded) || !loaded.group.is('Empty')) continue;
        inMemory = loaded.group;
      }
      const emptySince = inMemory?.emptySince ?? found.record.emptySince ?? now;
      const offsets = await readOffsets(this.options.store, groupId);
      const expired = offsets.filter(({ value }) => {
        if (value.expireTimestamp !== undefined) return now >= value.expireTimestamp;
        // A group that used group management: retention counts from when it became empty; a
        // group that only commits (protocol type ""): from each commit.
        const base = found.record.protocolType !== '' ? emptySince : (value.commitTimestamp ?? emptySince);
        return now - base >= retentionMs;
      });
      if (expired.length > 0) {
        await deleteOffsets(this.options.store, groupId, expired);
        for (const { topic, partition } of expired) inMemory?.knownOffsetNodes.delete(`${topic}/${partition}`);
        this.options.logger.info({ group: groupId, partitions: expired.length }, 'removed committed offsets past offsets.retention.minutes');
      }
      // An empty group without offsets is gone (Kafka: Dead), once it has been empty a while.
      if (expired.length === offsets.length && now - emptySince >= retentionCheckIntervalMs && (this.groups.get(groupId)?.is('Empty') ?? true)) {
        const group = this.groups.get(groupId);
        if (group !== undefined) {
          this.unload(group, KafkaErrorCode.COORDINATOR_NOT_AVAILABLE);
          await group.recordWrites;
        }
        await deleteGroup(this.options.store, groupId);
        this.options.logger.info({ group: groupId }, 'removed an empty group without offsets');
      } else if (inMemory !== undefined && inMemory.members.size === 0 && inMemory.pendingMembers.size === 0) {
        // Keep memory to the groups in use: an empty group reloads from the registry.
        this.unload(inMemory, KafkaErrorCode.NOT_COORDINATOR);
      }
    }
  }
}

function joinError(memberId: string, errorCode: number): JoinOutcome {
  return { errorCode, generationId: -1, protocolName: '', leader: '', memberId, members: [] };
}

/** A member-scoped request to a group that does not exist is answered UNKNOWN_MEMBER_ID, as in Kafka. */
function membershipError(errorCode: number): number {
  return errorCode === KafkaErrorCode.GROUP_ID_NOT_FOUND ? KafkaErrorCode.UNKNOWN_MEMBER_ID : errorCode;
}

function syncError(errorCode: number): SyncOutcome {
  return { errorCode, assignment: NO_BYTES };
}
