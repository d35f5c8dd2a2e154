/** `tributary groups list|describe|reset-offsets`: ZooKeeper consumer groups from outside. */
import { TributaryError } from '../../common/errors.js';
import { GroupAdmin, type ResetTarget } from '../../client/group-admin.js';
import { ZooKeeperStore } from '../../coordination/zookeeper-store.js';
import type { CommandIo } from '../not-implemented.js';

async function withAdmin<T>(zookeeper: string, run: (admin: GroupAdmin) => Promise<T>): Promise<T> {
  const store = await ZooKeeperStore.connect(zookeeper);
  try {
    return await run(new GroupAdmin(store));
  } finally {
    await store.close();
  }
}

export async function listGroups(io: CommandIo, options: { zookeeper: string }): Promise<void> {
  await withAdmin(options.zookeeper, async (admin) => {
    for (const group of await admin.listGroups()) io.writeOut(`${group}\n`);
  });
}

export async function describeGroup(io: CommandIo, options: { zookeeper: string; group: string }): Promise<void> {
  await withAdmin(options.zookeeper, async (admin) => {
    const description = await admin.describe(options.group);
    io.writeOut(`group ${description.group}: ${description.members.length} live members\n`);
    for (const member of description.members) io.writeOut(`  member ${member.id} ${JSON.stringify(member.subscription)}\n`);
    io.writeOut(`${'topic'.padEnd(24)}${'partition'.padEnd(11)}${'committed'.padEnd(12)}${'log end'.padEnd(12)}${'lag'.padEnd(10)}owner\n`);
    const text = (value: bigint | string | undefined): string => (value === undefined ? '-' : String(value));
    for (const p of description.partitions) {
      io.writeOut(`${p.topic.padEnd(24)}${String(p.partition).padEnd(11)}${text(p.committed).padEnd(12)}${text(p.logEnd).padEnd(12)}${text(p.lag).padEnd(10)}${text(p.owner)}\n`);
    }
  });
}

export interface ResetOptions {
  readonly zookeeper: string;
  readonly group: string;
  readonly topic: string;
  readonly toEarliest?: boolean;
  readonly toLatest?: boolean;
  readonly toOffset?: string;
  readonly toDatetime?: string;
  readonly shiftBy?: string;
}

export async function resetOffsets(io: CommandIo, options: ResetOptions): Promise<void> {
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
  await withAdmin(options.zookeeper, async (admin) => {
    const chosen = await admin.resetOffsets(options.group, options.topic, target);
    for (const [partition, offset] of chosen) io.writeOut(`${options.topic} ${partition} ${offset}\n`);
  });
}

function integer(value: string, flag: string): bigint {
  if (!/^-?\d+$/.test(value)) throw invalid(`${flag} takes an integer, not "${value}"`);
  return BigInt(value);
}

function invalid(message: string): TributaryError {
  return new TributaryError({ code: 'CONFIG_INVALID', message });
}
