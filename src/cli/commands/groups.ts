/**
 * `tributary groups list|describe|reset-offsets|delete`: both kinds of consumer group from
 * outside. With --zookeeper the offset registry is read (both kinds; a broker group's members and
 * state, and every change to it, go through its coordinator, found from the brokers registered
 * there); with --bootstrap-server only the Kafka protocol is spoken (broker groups; the only way to
 * reach a standalone broker).
 */
import { TributaryError } from '../../common/errors.js';
import { BrokerGroupAdmin, type BrokerGroupDescription, type BrokerGroupListing } from '../../client/broker-groups.js';
import { GroupAdmin, groupNotFound, type GroupDescription, type GroupPartition, type RegistryGroup, type ResetTarget } from '../../client/group-admin.js';
import type { ClientSecurity } from '../../client/security-config.js';
import { ZooKeeperStore } from '../../coordination/zookeeper-store.js';
import { commandSecurity } from '../command-security.js';
import type { CommandIo } from '../not-implemented.js';

/** Where the groups are read from: exactly one of the two flags. */
export interface GroupsConnection {
  readonly zookeeper?: string;
  readonly bootstrapServer?: string;
  /** Client security properties for the broker connections (--command-config). */
  readonly commandConfig?: string;
}

type Where = ({ readonly via: 'zookeeper'; readonly connect: string } | { readonly via: 'bootstrap'; readonly servers: string[] }) & { readonly security: ClientSecurity | undefined };

function where(options: GroupsConnection): Where {
  const { zookeeper, bootstrapServer } = options;
  if ((zookeeper === undefined) === (bootstrapServer === undefined)) {
    throw invalid(
      `${zookeeper === undefined ? 'neither --zookeeper nor --bootstrap-server' : 'both --zookeeper and --bootstrap-server'} given: give exactly one. ` +
        '--zookeeper HOST:PORT[/chroot] reads the registry of a cluster (groups of both kinds); ' +
        '--bootstrap-server HOST:PORT asks the brokers (broker-coordinated groups; the only way for a standalone broker)',
    );
  }
  const security = commandSecurity(options.commandConfig);
  if (zookeeper !== undefined) return { via: 'zookeeper', connect: zookeeper, security };
  const servers = (bootstrapServer ?? '').split(',').map((server) => server.trim()).filter((server) => server !== '');
  if (servers.length === 0) throw invalid('--bootstrap-server takes HOST:PORT[,HOST:PORT…], e.g. localhost:9092');
  return { via: 'bootstrap', servers, security };
}

async function withRegistry<T>(zookeeper: string, security: ClientSecurity | undefined, run: (admin: GroupAdmin) => Promise<T>): Promise<T> {
  const store = await ZooKeeperStore.connect(zookeeper);
  try {
    return await run(new GroupAdmin(store, security));
  } finally {
    await store.close();
  }
}

async function withBrokers<T>(servers: readonly string[], security: ClientSecurity | undefined, run: (admin: BrokerGroupAdmin) => Promise<T>): Promise<T> {
  const admin = await BrokerGroupAdmin.connect(servers, security);
  try {
    return await run(admin);
  } finally {
    admin.close();
  }
}

/** A broker group found in the registry is reached through the brokers registered next to it. */
async function withRegisteredBrokers<T>(registry: GroupAdmin, group: string, what: string, run: (admin: BrokerGroupAdmin) => Promise<T>): Promise<T> {
  const servers = await registry.brokerAddresses();
  if (servers.length === 0) {
    throw new TributaryError({
      code: 'NO_BROKERS',
      retriable: true,
      message: `group ${group} is coordinated by the brokers, and no broker is registered in this ZooKeeper: start one to ${what} (a broker group is only changed through its coordinator)`,
      details: { group },
    });
  }
  return withBrokers(servers, registry.security, run);
}

/** Both kinds of group, from either source: one line per group with its kind and state. */
export async function listGroups(io: CommandIo, options: GroupsConnection): Promise<void> {
  const at = where(options);
  const rows: [string, string, string][] = [];
  if (at.via === 'bootstrap') {
    await withBrokers(at.servers, at.security, async (admin) => {
      const { groups, unanswered } = await admin.list();
      for (const listing of groups) rows.push([listing.group, 'broker', brokerState(listing)]);
      for (const { broker, reason } of unanswered) io.writeErr(`tributary: ${broker} did not answer ListGroups (${reason}); the groups it coordinates are missing\n`);
    });
  } else {
    await withRegistry(at.connect, at.security, async (registry) => {
      const groups = await registry.listGroupKinds();
      const states = groups.some((group) => group.kind === 'broker') ? await brokerStates(registry, io) : undefined;
      for (const group of groups) rows.push([group.group, group.kind, registryState(group, states)]);
    });
  }
  printTable(io, ['group', 'kind', 'state'], rows);
}

/** The states of the broker groups, from their coordinators; a note instead when none answers. */
async function brokerStates(registry: GroupAdmin, io: CommandIo): Promise<Map<string, BrokerGroupListing> | string> {
  const servers = await registry.brokerAddresses();
  if (servers.length === 0) return 'unknown (no broker is registered)';
  try {
    return await withBrokers(servers, registry.security, async (admin) => {
      const { groups, unanswered } = await admin.list();
      for (const { broker, reason } of unanswered) io.writeErr(`tributary: ${broker} did not answer ListGroups (${reason}); the states of the groups it coordinates are unknown\n`);
      return new Map(groups.map((listing) => [listing.group, listing]));
    });
  } catch (error) {
    io.writeErr(`tributary: no broker answered (${error instanceof Error ? error.message : String(error)}); the states of broker groups are unknown\n`);
    return 'unknown (no broker answered)';
  }
}

function registryState(group: RegistryGroup, states: Map<string, BrokerGroupListing> | string | undefined): string {
  switch (group.kind) {
    case 'zookeeper':
      return count(group.liveMembers.length, 'live member');
    case 'broker': {
      if (typeof states === 'string') return states;
      const listing = states?.get(group.group);
      return listing === undefined ? 'unknown (its coordinator did not answer)' : brokerState(listing);
    }
    case 'none':
      return 'offsets only (no member has claimed the id yet)';
    case 'unreadable':
      return 'its kind node is corrupt (/consumers/<group>/kind)';
  }
}

function brokerState(listing: BrokerGroupListing): string {
  if (listing.state === undefined) return 'unknown (its coordinator did not answer DescribeGroups)';
  return listing.members === undefined || listing.members === 0 ? listing.state : `${listing.state}, ${count(listing.members, 'member')}`;
}

export async function describeGroup(io: CommandIo, options: GroupsConnection & { group: string }): Promise<void> {
  const at = where(options);
  if (at.via === 'bootstrap') {
    printBrokerGroup(io, await withBrokers(at.servers, at.security, (admin) => admin.describe(options.group)));
    return;
  }
  await withRegistry(at.connect, at.security, async (registry) => {
    const kind = await registry.kindOf(options.group);
    if (kind === undefined) throw groupNotFound(options.group);
    if (kind === 'broker') {
      printBrokerGroup(io, await withRegisteredBrokers(registry, options.group, 'describe it', (admin) => admin.describe(options.group)));
      return;
    }
    printZooKeeperGroup(io, await registry.describe(options.group), kind);
  });
}

function printZooKeeperGroup(io: CommandIo, description: GroupDescription, kind: 'zookeeper' | 'none'): void {
  const what = kind === 'zookeeper' ? 'ZooKeeper group' : 'offsets only, no member has claimed the id yet';
  io.writeOut(`group ${description.group}: ${what}, ${count(description.members.length, 'live member')}\n`);
  for (const member of description.members) io.writeOut(`  member ${member.id} ${JSON.stringify(member.subscription)}\n`);
  printPartitions(io, description.partitions);
}

function printBrokerGroup(io: CommandIo, description: BrokerGroupDescription): void {
  const { coordinator } = description;
  const protocol = description.protocolType === '' ? '' : `, protocol ${description.protocolType}${description.protocol === '' ? '' : ` (${description.protocol})`}`;
  io.writeOut(
    `group ${description.group}: broker-coordinated, state ${description.state}${protocol}, ` +
      `coordinator broker ${coordinator.nodeId} (${coordinator.host}:${coordinator.port}), ${count(description.members.length, 'member')}\n`,
  );
  if (description.state === 'Dead') {
    io.writeOut('  (no broker coordinates a group of this id: it only has committed offsets, or it is a ZooKeeper group; describe it with --zookeeper for its members)\n');
  }
  for (const member of description.members) {
    const instance = member.groupInstanceId === null ? '' : `  instance ${member.groupInstanceId}`;
    const assigned = member.assignment === undefined ? (member.assignmentNote ?? '-') : member.assignment.map(({ topic, partitions }) => `${topic}[${partitions.join(',')}]`).join(' ') || 'nothing';
    io.writeOut(`  member ${member.memberId}${instance}  client ${member.clientId}  host ${member.clientHost}  assigned ${assigned}\n`);
  }
  printPartitions(io, description.partitions);
}

function printPartitions(io: CommandIo, partitions: readonly GroupPartition[]): void {
  io.writeOut(`${'topic'.padEnd(24)}${'partition'.padEnd(11)}${'committed'.padEnd(12)}${'log end'.padEnd(12)}${'lag'.padEnd(10)}owner\n`);
  const text = (value: bigint | string | undefined): string => (value === undefined ? '-' : String(value));
  for (const p of partitions) {
    io.writeOut(`${p.topic.padEnd(24)}${String(p.partition).padEnd(11)}${text(p.committed).padEnd(12)}${text(p.logEnd).padEnd(12)}${text(p.lag).padEnd(10)}${text(p.owner)}\n`);
  }
}

export interface ResetOptions extends GroupsConnection {
  readonly group: string;
  readonly topic: string;
  readonly toEarliest?: boolean;
  readonly toLatest?: boolean;
  readonly toOffset?: string;
  readonly toDatetime?: string;
  readonly shiftBy?: string;
}

export async function resetOffsets(io: CommandIo, options: ResetOptions): Promise<void> {
  const target = resetTarget(options);
  const at = where(options);
  const chosen =
    at.via === 'bootstrap'
      ? await withBrokers(at.servers, at.security, (admin) => admin.resetOffsets(options.group, options.topic, target))
      : await withRegistry(at.connect, at.security, async (registry) => {
          if ((await registry.kindOf(options.group)) === 'broker') {
            return withRegisteredBrokers(registry, options.group, 'reset its offsets', (admin) => admin.resetOffsets(options.group, options.topic, target));
          }
          return registry.resetOffsets(options.group, options.topic, target);
        });
  for (const [partition, offset] of chosen) io.writeOut(`${options.topic} ${partition} ${offset}\n`);
}

function resetTarget(options: ResetOptions): ResetTarget {
  const targets: ResetTarget[] = [];
  if (options.toEarliest === true) targets.push({ kind: 'earliest' });
  if (options.toLatest === true) targets.push({ kind: 'latest' });
  if (options.toOffset !== undefined) targets.push({ kind: 'offset', offset: integer(options.toOffset, '--to-offset') });
  if (options.toDatetime !== undefined) {
    const timestamp = Date.parse(options.toDatetime);
    if (Number.isNaN(timestamp)) throw invalid(`--to-datetime must be an ISO date-time such as 2026-11-29T13:00:00Z, not "${options.toDatetime}"`);
    targets.push({ kind: 'datetime', timestamp });
  }
  if (options.shiftBy !== undefined) targets.push({ kind: 'shift', by: integer(options.shiftBy, '--shift-by') });
  const [target, ...extra] = targets;
  if (target === undefined || extra.length > 0) {
    throw invalid('give exactly one of --to-earliest, --to-latest, --to-offset N, --to-datetime ISO, --shift-by N');
  }
  return target;
}

export async function deleteGroup(io: CommandIo, options: GroupsConnection & { group: string }): Promise<void> {
  const at = where(options);
  if (at.via === 'bootstrap') {
    await withBrokers(at.servers, at.security, (admin) => admin.delete(options.group));
  } else {
    await withRegistry(at.connect, at.security, async (registry) => {
      if ((await registry.kindOf(options.group)) === 'broker') await withRegisteredBrokers(registry, options.group, 'delete it', (admin) => admin.delete(options.group));
      else await registry.deleteGroup(options.group);
    });
  }
  io.writeOut(`deleted group ${options.group}\n`);
}

function printTable(io: CommandIo, header: readonly string[], rows: readonly (readonly string[])[]): void {
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => (row[column] ?? '').length)) + 2);
  const line = (cells: readonly string[]): string =>
    cells
      .map((cell, column) => (column === cells.length - 1 ? cell : cell.padEnd(widths[column] ?? 0)))
      .join('')
      .trimEnd();
  io.writeOut(`${line(header)}\n`);
  for (const row of rows) io.writeOut(`${line(row)}\n`);
}

function count(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? '' : 's'}`;
}

function integer(value: string, flag: string): bigint {
  if (!/^-?\d+$/.test(value)) throw invalid(`${flag} takes an integer, not "${value}"`);
  return BigInt(value);
}

function invalid(message: string): TributaryError {
  return new TributaryError({ code: 'CONFIG_INVALID', message });
}
