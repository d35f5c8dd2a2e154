/**
 * Kafka's access-control vocabulary: resource types, pattern types, operations and permissions,
 * with the numeric codes the ACL APIs carry and the names the ZooKeeper JSON and the tools use
 * (`Topic`, `Read`, `Allow`, …), an ACL binding (a resource pattern and one entry), and the
 * filters DescribeAcls / DeleteAcls match bindings with (Kafka's AclBindingFilter semantics), and
 * the conversions to and from the stored form (coordination/acl-store.ts).
 */
import type { StoredAclEntry, StoredAclResource, StoredAcls } from '../../coordination/acl-store.js';

/** ResourceType codes (org.apache.kafka.common.resource.ResourceType). */
export const ResourceType = { UNKNOWN: 0, ANY: 1, TOPIC: 2, GROUP: 3, CLUSTER: 4, TRANSACTIONAL_ID: 5, DELEGATION_TOKEN: 6, USER: 7 } as const;
export type ResourceType = (typeof ResourceType)[keyof typeof ResourceType];

/** PatternType codes: ANY and MATCH exist only in filters; an ACL is LITERAL or PREFIXED. */
export const PatternType = { UNKNOWN: 0, ANY: 1, MATCH: 2, LITERAL: 3, PREFIXED: 4 } as const;
export type PatternType = (typeof PatternType)[keyof typeof PatternType];

/** AclOperation codes. */
export const AclOperation = {
  UNKNOWN: 0,
  ANY: 1,
  ALL: 2,
  READ: 3,
  WRITE: 4,
  CREATE: 5,
  DELETE: 6,
  ALTER: 7,
  DESCRIBE: 8,
  CLUSTER_ACTION: 9,
  DESCRIBE_CONFIGS: 10,
  ALTER_CONFIGS: 11,
  IDEMPOTENT_WRITE: 12,
  CREATE_TOKENS: 13,
  DESCRIBE_TOKENS: 14,
} as const;
export type AclOperation = (typeof AclOperation)[keyof typeof AclOperation];

/** AclPermissionType codes. */
export const AclPermission = { UNKNOWN: 0, ANY: 1, DENY: 2, ALLOW: 3 } as const;
export type AclPermission = (typeof AclPermission)[keyof typeof AclPermission];

/** The one name a CLUSTER resource has. */
export const CLUSTER_RESOURCE_NAME = 'kafka-cluster';
/** A LITERAL resource named `*` matches every resource of its type. */
export const WILDCARD_RESOURCE = '*';
export const WILDCARD_PRINCIPAL = 'User:*';
export const WILDCARD_HOST = '*';

/** One ACL: who may (or may not) do what on which resources, from which host. */
export interface AclBinding {
  readonly resourceType: ResourceType;
  readonly resourceName: string;
  readonly patternType: typeof PatternType.LITERAL | typeof PatternType.PREFIXED;
  /** `User:<name>` or `User:*`. */
  readonly principal: string;
  /** An IP address or `*`. */
  readonly host: string;
  readonly operation: AclOperation;
  readonly permission: AclPermission;
}

/** A DescribeAcls / DeleteAcls filter: null names, principals and hosts, and the ANY codes, match everything. */
export interface AclBindingFilter {
  readonly resourceType: number;
  readonly resourceName: string | null;
  readonly patternType: number;
  readonly principal: string | null;
  readonly host: string | null;
  readonly operation: number;
  readonly permission: number;
}

// The names Kafka writes in ZooKeeper paths and JSON (SecurityUtils: PascalCase of the enum).
const RESOURCE_TYPE_NAMES: ReadonlyMap<number, string> = new Map([
  [ResourceType.TOPIC, 'Topic'],
  [ResourceType.GROUP, 'Group'],
  [ResourceType.CLUSTER, 'Cluster'],
  [ResourceType.TRANSACTIONAL_ID, 'TransactionalId'],
  [ResourceType.DELEGATION_TOKEN, 'DelegationToken'],
  [ResourceType.USER, 'User'],
]);
const OPERATION_NAMES: ReadonlyMap<number, string> = new Map([
  [AclOperation.ALL, 'All'],
  [AclOperation.READ, 'Read'],
  [AclOperation.WRITE, 'Write'],
  [AclOperation.CREATE, 'Create'],
  [AclOperation.DELETE, 'Delete'],
  [AclOperation.ALTER, 'Alter'],
  [AclOperation.DESCRIBE, 'Describe'],
  [AclOperation.CLUSTER_ACTION, 'ClusterAction'],
  [AclOperation.DESCRIBE_CONFIGS, 'DescribeConfigs'],
  [AclOperation.ALTER_CONFIGS, 'AlterConfigs'],
  [AclOperation.IDEMPOTENT_WRITE, 'IdempotentWrite'],
  [AclOperation.CREATE_TOKENS, 'CreateTokens'],
  [AclOperation.DESCRIBE_TOKENS, 'DescribeTokens'],
]);
const PERMISSION_NAMES: ReadonlyMap<number, string> = new Map([
  [AclPermission.ALLOW, 'Allow'],
  [AclPermission.DENY, 'Deny'],
]);

/** `Topic`, `Group`, `Cluster`, … (undefined for ANY/UNKNOWN). */
export function resourceTypeName(type: number): string | undefined {
  return RESOURCE_TYPE_NAMES.get(type);
}

export function operationName(operation: number): string | undefined {
  return OPERATION_NAMES.get(operation);
}

export function permissionName(permission: number): string | undefined {
  return PERMISSION_NAMES.get(permission);
}

/** Folds `DescribeConfigs`, `describe-configs`, `DESCRIBE_CONFIGS` and `describeconfigs` alike. */
function fold(name: string): string {
  return name.replace(/[-_\s]/g, '').toLowerCase();
}

function parseName<T extends number>(names: ReadonlyMap<number, string>, name: string): T | undefined {
  const wanted = fold(name);
  for (const [code, candidate] of names) if (fold(candidate) === wanted) return code as T;
  return undefined;
}

export function parseResourceType(name: string): ResourceType | undefined {
  return parseName<ResourceType>(RESOURCE_TYPE_NAMES, name);
}

export function parseOperation(name: string): AclOperation | undefined {
  return parseName<AclOperation>(OPERATION_NAMES, name);
}

export function parsePermission(name: string): AclPermission | undefined {
  return parseName<AclPermission>(PERMISSION_NAMES, name);
}

/** Whether `principal` reads as Kafka's `<type>:<name>` with both parts non-empty. */
export function isValidPrincipal(principal: string): boolean {
  const colon = principal.indexOf(':');
  return colon > 0 && colon < principal.length - 1;
}

/** Why a binding may not be stored (Kafka refuses these with INVALID_REQUEST), or undefined. */
export function invalidBindingReason(binding: AclBinding): string | undefined {
  if (resourceTypeName(binding.resourceType) === undefined) return `resource type ${binding.resourceType} is not a concrete resource type`;
  if (binding.patternType !== PatternType.LITERAL && binding.patternType !== PatternType.PREFIXED) return `pattern type ${String(binding.patternType)} is neither LITERAL (3) nor PREFIXED (4)`;
  if (binding.resourceName === '') return 'the resource name is empty';
  if (binding.resourceType === ResourceType.CLUSTER && binding.resourceName !== CLUSTER_RESOURCE_NAME) return `the only valid name of the cluster resource is ${CLUSTER_RESOURCE_NAME}`;
  if (operationName(binding.operation) === undefined) return `operation ${binding.operation} is not a concrete operation`;
  if (permissionName(binding.permission) === undefined) return `permission type ${binding.permission} is neither DENY (2) nor ALLOW (3)`;
  if (!isValidPrincipal(binding.principal)) return `principal "${binding.principal}" is not of the form User:<name>`;
  if (binding.host === '') return 'the host is empty (use * for every host)';
  return undefined;
}

/** Why a filter cannot be used (an UNKNOWN code in it), or undefined. */
export function invalidFilterReason(filter: AclBindingFilter): string | undefined {
  if (filter.resourceType === ResourceType.UNKNOWN || filter.resourceType > ResourceType.USER) return `unknown resource type ${filter.resourceType}`;
  if (filter.patternType === PatternType.UNKNOWN || filter.patternType > PatternType.PREFIXED) return `unknown pattern type ${filter.patternType}`;
  if (filter.operation === AclOperation.UNKNOWN || filter.operation > AclOperation.DESCRIBE_TOKENS) return `unknown operation ${filter.operation}`;
  if (filter.permission === AclPermission.UNKNOWN || filter.permission > AclPermission.ALLOW) return `unknown permission type ${filter.permission}`;
  return undefined;
}

/** Kafka's ResourcePatternFilter.matches plus AccessControlEntryFilter.matches. */
export function filterMatches(filter: AclBindingFilter, binding: AclBinding): boolean {
  if (filter.resourceType !== ResourceType.ANY && filter.resourceType !== binding.resourceType) return false;
  if (!patternMatches(filter, binding)) return false;
  if (filter.principal !== null && filter.principal !== binding.principal) return false;
  if (filter.host !== null && filter.host !== binding.host) return false;
  if (filter.operation !== AclOperation.ANY && filter.operation !== binding.operation) return false;
  return filter.permission === AclPermission.ANY || filter.permission === binding.permission;
}

function patternMatches(filter: AclBindingFilter, binding: AclBinding): boolean {
  if (filter.patternType === PatternType.MATCH) {
    // MATCH: the patterns that would apply to a resource of that name.
    if (filter.resourceName === null) return true;
    if (binding.patternType === PatternType.PREFIXED) return filter.resourceName.startsWith(binding.resourceName);
    return binding.resourceName === filter.resourceName || binding.resourceName === WILDCARD_RESOURCE;
  }
  if (filter.patternType !== PatternType.ANY && filter.patternType !== binding.patternType) return false;
  return filter.resourceName === null || filter.resourceName === binding.resourceName;
}

/** `User:alice has Allow permission for operations: Read from hosts: *`, for tools and logs. */
export function describeBinding(binding: AclBinding): string {
  const pattern = binding.patternType === PatternType.PREFIXED ? 'PREFIXED' : 'LITERAL';
  return `${resourceTypeName(binding.resourceType) ?? binding.resourceType}:${pattern}:${binding.resourceName} ${binding.principal} has ${permissionName(binding.permission) ?? binding.permission} permission for operations: ${operationName(binding.operation) ?? binding.operation} from hosts: ${binding.host}`;
}

/** The stored form in codes; entries that do not parse (a name from a newer Kafka) are skipped. */
export function storedToBindings(stored: StoredAcls): AclBinding[] {
  const resourceType = parseResourceType(stored.resource.resourceType);
  if (resourceType === undefined) return [];
  const patternType = stored.resource.patternType === 'PREFIXED' ? PatternType.PREFIXED : PatternType.LITERAL;
  const bindings: AclBinding[] = [];
  for (const entry of stored.entries) {
    const operation = parseOperation(entry.operation);
    const permission = parsePermission(entry.permissionType);
    if (operation === undefined || permission === undefined) continue;
    bindings.push({ resourceType, resourceName: stored.resource.name, patternType, principal: entry.principal, host: entry.host, operation, permission });
  }
  return bindings;
}

/** Where a binding is stored, and its entry there. */
export function bindingToStored(binding: AclBinding): { readonly resource: StoredAclResource; readonly entry: StoredAclEntry } {
  return {
    resource: { patternType: binding.patternType === PatternType.PREFIXED ? 'PREFIXED' : 'LITERAL', resourceType: resourceTypeName(binding.resourceType) ?? String(binding.resourceType), name: binding.resourceName },
    entry: { principal: binding.principal, permissionType: permissionName(binding.permission) ?? String(binding.permission), operation: operationName(binding.operation) ?? String(binding.operation), host: binding.host },
  };
}
