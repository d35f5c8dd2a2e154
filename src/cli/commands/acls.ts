/**
 * `tributary acls add|remove|list --zookeeper HOST:PORT[/chroot]`: the ACLs in a cluster's
 * coordination store, with kafka-acls.sh's flags. Brokers with `authorizer=acl` see a change
 * through their watches within moments. (A standalone broker's store lives inside its process:
 * use kafka-acls.sh --bootstrap-server against it.)
 *
 *   tributary acls add --zookeeper localhost:2181 --allow-principal User:alice --operation Read --topic events
 *   tributary acls add --zookeeper localhost:2181 --allow-principal User:etl --operation All --topic etl- --resource-pattern-type prefixed
 *   tributary acls remove --zookeeper localhost:2181 --deny-principal User:mallory --topic events
 *   tributary acls list --zookeeper localhost:2181 [--topic events] [--principal User:alice]
 */
import { TributaryError } from '../../common/errors.js';
import type { CoordinationStore } from '../../coordination/store.js';
import { ZooKeeperStore } from '../../coordination/zookeeper-store.js';
import {
  AclOperation,
  AclPermission,
  CLUSTER_RESOURCE_NAME,
  describeBinding,
  filterMatches,
  invalidBindingReason,
  parseOperation,
  PatternType,
  ResourceType,
  type AclBinding,
  type AclBindingFilter,
} from '../../broker/security/acl.js';
import { addAcls, listAcls, removeAcls } from '../../broker/security/acl-admin.js';
import type { CommandIo } from '../not-implemented.js';

export interface AclsOptions {
  readonly zookeeper: string;
  readonly allowPrincipal?: string[];
  readonly denyPrincipal?: string[];
  /** `list` only: the principal whose ACLs are shown. */
  readonly principal?: string[];
  readonly allowHost?: string[];
  readonly denyHost?: string[];
  readonly operation?: string[];
  readonly topic?: string[];
  readonly group?: string[];
  readonly cluster?: boolean;
  /** literal | prefixed (add); also any | match (remove, list). */
  readonly resourcePatternType?: string;
}

function invalid(message: string): TributaryError {
  return new TributaryError({ code: 'CONFIG_INVALID', message });
}

async function withStore<T>(zookeeper: string, run: (store: CoordinationStore) => Promise<T>): Promise<T> {
  const store = await ZooKeeperStore.connect(zookeeper);
  try {
    return await run(store);
  } finally {
    await store.close();
  }
}

/** The resources the flags name: topics, groups, the cluster. */
function resources(options: AclsOptions): { resourceType: ResourceType; name: string }[] {
  return [
    ...(options.topic ?? []).map((name) => ({ resourceType: ResourceType.TOPIC, name })),
    ...(options.group ?? []).map((name) => ({ resourceType: ResourceType.GROUP, name })),
    ...(options.cluster === true ? [{ resourceType: ResourceType.CLUSTER, name: CLUSTER_RESOURCE_NAME }] : []),
  ];
}

function patternType(options: AclsOptions, allowed: readonly string[]): PatternType {
  const value = (options.resourcePatternType ?? 'literal').toLowerCase();
  if (!allowed.includes(value)) throw invalid(`--resource-pattern-type must be one of ${allowed.join(', ')}, not "${options.resourcePatternType ?? ''}"`);
  return { any: PatternType.ANY, match: PatternType.MATCH, literal: PatternType.LITERAL, prefixed: PatternType.PREFIXED }[value as 'any' | 'match' | 'literal' | 'prefixed'];
}

function operations(options: AclsOptions, whenNone: AclOperation): AclOperation[] {
  if (options.operation === undefined || options.operation.length === 0) return [whenNone];
  return options.operation.map((name) => {
    const operation = parseOperation(name);
    if (operation === undefined) throw invalid(`unknown --operation "${name}": one of Read, Write, Create, Delete, Alter, Describe, ClusterAction, DescribeConfigs, AlterConfigs, IdempotentWrite, All`);
    return operation;
  });
}

/** The (permission, principal, hosts) triples of the --allow-/--deny- flags. */
function grants(options: AclsOptions): { permission: AclPermission; principal: string; hosts: string[] }[] {
  const hostsOf = (hosts: string[] | undefined): string[] => (hosts === undefined || hosts.length === 0 ? ['*'] : hosts);
  return [
    ...(options.allowPrincipal ?? []).map((principal) => ({ permission: AclPermission.ALLOW, principal, hosts: hostsOf(options.allowHost) })),
    ...(options.denyPrincipal ?? []).map((principal) => ({ permission: AclPermission.DENY, principal, hosts: hostsOf(options.denyHost) })),
  ];
}

/** Every binding the flags of `add` describe (their cross product). */
export function bindingsToAdd(options: AclsOptions): AclBinding[] {
  const targets = resources(options);
  if (targets.length === 0) throw invalid('name at least one resource: --topic, --group or --cluster');
  const who = grants(options);
  if (who.length === 0) throw invalid('name at least one principal: --allow-principal or --deny-principal (e.g. User:alice, or User:* for everyone)');
  const pattern = patternType(options, ['literal', 'prefixed']) as AclBinding['patternType'];
  const bindings: AclBinding[] = [];
  for (const { resourceType, name } of targets) {
    for (const { permission, principal, hosts } of who) {
      for (const host of hosts) {
        for (const operation of operations(options, AclOperation.ALL)) {
          const binding: AclBinding = { resourceType, resourceName: name, patternType: pattern, principal, host, operation, permission };
          const reason = invalidBindingReason(binding);
          if (reason !== undefined) throw invalid(`cannot add ${describeBinding(binding)}: ${reason}`);
          bindings.push(binding);
        }
      }
    }
  }
  return bindings;
}

/** The filters of `remove` / `list`: absent flags match anything. */
export function filtersOf(options: AclsOptions): AclBindingFilter[] {
  const pattern = patternType(options, ['any', 'match', 'literal', 'prefixed']);
  const targets: { resourceType: number; name: string | null }[] = resources(options);
  const who: { permission: number; principal: string | null; hosts: (string | null)[] }[] = grants(options);
  for (const principal of options.principal ?? []) who.push({ permission: AclPermission.ANY, principal, hosts: [null] });
  const explicitOperations = options.operation !== undefined && options.operation.length > 0;
  const filters: AclBindingFilter[] = [];
  for (const { resourceType, name } of targets.length > 0 ? targets : [{ resourceType: ResourceType.ANY, name: null }]) {
    for (const { permission, principal, hosts } of who.length > 0 ? who : [{ permission: AclPermission.ANY, principal: null, hosts: [null] }]) {
      // A host given on the command line narrows the filter; the default `*` of add does not.
      const hostList = hosts.length === 1 && hosts[0] === '*' && options.allowHost === undefined && options.denyHost === undefined ? [null] : hosts;
      for (const host of hostList) {
        for (const operation of explicitOperations ? operations(options, AclOperation.ANY) : [AclOperation.ANY]) {
          filters.push({ resourceType, resourceName: name, patternType: targets.length > 0 ? pattern : PatternType.ANY, principal, host, operation, permission });
        }
      }
    }
  }
  return filters;
}

function printBindings(io: CommandIo, bindings: readonly AclBinding[]): void {
  const byResource = new Map<string, AclBinding[]>();
  for (const binding of bindings) {
    const pattern = binding.patternType === PatternType.PREFIXED ? 'PREFIXED' : 'LITERAL';
    const type = Object.entries(ResourceType).find(([, code]) => code === binding.resourceType)?.[0] ?? String(binding.resourceType);
    const key = `ResourcePattern(resourceType=${type}, name=${binding.resourceName}, patternType=${pattern})`;
    byResource.set(key, [...(byResource.get(key) ?? []), binding]);
  }
  const name = (table: Record<string, number>, code: number): string => Object.entries(table).find(([, value]) => value === code)?.[0] ?? String(code);
  for (const [resource, list] of byResource) {
    io.writeOut(`Current ACLs for resource \`${resource}\`:\n`);
    for (const binding of list) io.writeOut(`\t(principal=${binding.principal}, host=${binding.host}, operation=${name(AclOperation, binding.operation)}, permissionType=${name(AclPermission, binding.permission)})\n`);
    io.writeOut('\n');
  }
  if (byResource.size === 0) io.writeOut('No ACLs match.\n');
}

export async function addAclsWith(store: CoordinationStore, io: CommandIo, options: AclsOptions): Promise<void> {
  const bindings = bindingsToAdd(options);
  const failures = (await addAcls(store, bindings)).flatMap((error, index) => (error === undefined ? [] : [`${describeBinding(bindings[index]!)}: ${error.message}`]));
  if (failures.length > 0) throw new TributaryError({ code: 'ACL_UPDATE_FAILED', retriable: true, message: `some ACLs may not have been added; list them, then retry:\n${failures.join('\n')}` });
  io.writeOut(`Added ${bindings.length} ACL${bindings.length === 1 ? '' : 's'}.\n`);
  printBindings(io, bindings);
}

export async function removeAclsWith(store: CoordinationStore, io: CommandIo, options: AclsOptions): Promise<void> {
  const removed = (await removeAcls(store, filtersOf(options))).flat();
  const failed = removed.filter(({ error }) => error !== undefined);
  io.writeOut(`Removed ${removed.length - failed.length} ACL${removed.length - failed.length === 1 ? '' : 's'}.\n`);
  printBindings(
    io,
    removed.filter(({ error }) => error === undefined).map(({ binding }) => binding),
  );
  if (failed.length > 0) throw new TributaryError({ code: 'ACL_UPDATE_FAILED', retriable: true, message: `${failed.length} matching ACLs may not have been removed; list them, then retry` });
}

export async function listAclsWith(store: CoordinationStore, io: CommandIo, options: AclsOptions): Promise<void> {
  const filters = filtersOf(options);
  printBindings(
    io,
    (await listAcls(store)).filter((binding) => filters.some((filter) => filterMatches(filter, binding))),
  );
}

export async function aclsAdd(io: CommandIo, options: AclsOptions): Promise<void> {
  bindingsToAdd(options); // flags checked before connecting
  await withStore(options.zookeeper, (store) => addAclsWith(store, io, options));
}

export async function aclsRemove(io: CommandIo, options: AclsOptions): Promise<void> {
  if (resources(options).length === 0 && grants(options).length === 0) {
    throw invalid('name what to remove: a resource (--topic, --group, --cluster) and/or a principal (--allow-principal, --deny-principal)');
  }
  filtersOf(options);
  await withStore(options.zookeeper, (store) => removeAclsWith(store, io, options));
}

export async function aclsList(io: CommandIo, options: AclsOptions): Promise<void> {
  filtersOf(options);
  await withStore(options.zookeeper, (store) => listAclsWith(store, io, options));
}
