/**
 * Who may do what: Kafka's AclAuthorizer rules over the ACLs in the coordination store.
 *
 * - A super user (`super.users`) may do everything.
 * - The ACLs that apply to a resource are those of its LITERAL name, of the LITERAL `*` of its
 *   type, and of every PREFIXED pattern its name starts with. With none at all, the answer is
 *   `allow.everyone.if.no.acl.found`.
 * - An entry applies to a request when its principal is the requester's or `User:*`, and its host
 *   is the client's address or `*`.
 * - Deny beats allow: a matching DENY entry for the operation (or ALL) refuses, whatever allows it.
 * - Otherwise a matching ALLOW entry for the operation or ALL allows; DESCRIBE is also allowed by
 *   READ, WRITE, DELETE or ALTER, and DESCRIBE_CONFIGS by ALTER_CONFIGS (a DENY of READ does not
 *   deny DESCRIBE).
 *
 * `authorizeAny` is Kafka's authorizeByResourceType (2.8+): whether the principal may do the
 * operation on at least one resource of the type — what lets an idempotent producer with WRITE on
 * some topic call InitProducerId without IDEMPOTENT_WRITE on the cluster.
 *
 * `authorizer=none` (the default) allows everything.
 */
import type { Logger } from '../../common/logger.js';
import { AclCache } from '../../coordination/acl-store.js';
import type { CoordinationStore } from '../../coordination/store.js';
import {
  AclOperation,
  AclPermission,
  PatternType,
  storedToBindings,
  WILDCARD_HOST,
  WILDCARD_PRINCIPAL,
  WILDCARD_RESOURCE,
  type AclBinding,
  type ResourceType,
} from './acl.js';
import type { ConnectionIdentity } from './identity.js';

export interface Authorizer {
  /** False for `authorizer=none`: the ACL APIs then answer SECURITY_DISABLED. */
  readonly enabled: boolean;
  authorize(identity: ConnectionIdentity, operation: AclOperation, resourceType: ResourceType, name: string): boolean;
  /** Whether `operation` is allowed on at least one resource of `resourceType` (Kafka's authorizeByResourceType). */
  authorizeAny(identity: ConnectionIdentity, operation: AclOperation, resourceType: ResourceType): boolean;
  /** Every ACL, as last read from the store (empty without an authorizer). */
  bindings(): readonly AclBinding[];
  /** Re-reads the store: after it, what was stored at the call is seen. */
  refresh(): Promise<void>;
  start(): Promise<void>;
  stop(): void;
}

export interface AuthorizerOptions {
  readonly kind: 'none' | 'acl';
  /** `User:a;User:b` (Kafka's format). */
  readonly superUsers: string;
  readonly allowEveryoneIfNoAclFound: boolean;
  readonly store: CoordinationStore;
  readonly logger: Logger;
}

export function createAuthorizer(options: AuthorizerOptions): Authorizer {
  return options.kind === 'none' ? new AllowAllAuthorizer() : new AclAuthorizer(options);
}

export class AllowAllAuthorizer implements Authorizer {
  readonly enabled = false;
  authorize(): boolean {
    return true;
  }
  authorizeAny(): boolean {
    return true;
  }
  bindings(): readonly AclBinding[] {
    return [];
  }
  async refresh(): Promise<void> {}
  async start(): Promise<void> {}
  stop(): void {}
}

/** `User:a; User:b` → the principals. */
export function parseSuperUsers(value: string): Set<string> {
  return new Set(
    value
      .split(';')
      .map((principal) => principal.trim())
      .filter((principal) => principal !== ''),
  );
}

/** The operations whose ALLOW grants `operation` (besides ALL). */
function grantingOperations(operation: AclOperation): readonly AclOperation[] {
  if (operation === AclOperation.DESCRIBE) return [AclOperation.DESCRIBE, AclOperation.READ, AclOperation.WRITE, AclOperation.DELETE, AclOperation.ALTER];
  if (operation === AclOperation.DESCRIBE_CONFIGS) return [AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS];
  return [operation];
}

/** `::ffff:10.0.0.1` (an IPv4 client on a dual-stack socket) is `10.0.0.1`, as Java reports it. */
function normalizeHost(host: string): string {
  return host.startsWith('::ffff:') && host.includes('.') ? host.slice('::ffff:'.length) : host;
}

/** Whether an entry speaks to this requester: its permission, principal (or `User:*`), host (or `*`), and one of the operations (or ALL). */
function entryApplies(binding: AclBinding, principal: string, host: string, permission: AclPermission, operations: readonly AclOperation[]): boolean {
  return (
    binding.permission === permission &&
    (binding.principal === principal || binding.principal === WILDCARD_PRINCIPAL) &&
    (binding.host === host || binding.host === WILDCARD_HOST) &&
    (binding.operation === AclOperation.ALL || operations.includes(binding.operation))
  );
}

/** The bindings of one resource type, indexed for the checks. */
interface TypeIndex {
  readonly literal: Map<string, AclBinding[]>;
  readonly prefixed: Map<string, AclBinding[]>;
}

export class AclAuthorizer implements Authorizer {
  readonly enabled = true;
  private readonly superUsers: ReadonlySet<string>;
  private readonly allowEveryone: boolean;
  private readonly cache: AclCache;
  private all: readonly AclBinding[] = [];
  private byType = new Map<number, TypeIndex>();

  constructor(options: Omit<AuthorizerOptions, 'kind'>) {
    this.superUsers = parseSuperUsers(options.superUsers);
    this.allowEveryone = options.allowEveryoneIfNoAclFound;
    this.cache = new AclCache(options.store, options.logger.child({ component: 'authorizer' }), () => this.rebuild());
  }

  start(): Promise<void> {
    return this.cache.start();
  }

  stop(): void {
    this.cache.stop();
  }

  refresh(): Promise<void> {
    return this.cache.refresh();
  }

  bindings(): readonly AclBinding[] {
    return this.all;
  }

  /** Replaces the ACLs checked against (the cache calls this after each reload; tests may too). */
  setBindings(bindings: readonly AclBinding[]): void {
    const byType = new Map<number, TypeIndex>();
    for (const binding of bindings) {
      let index = byType.get(binding.resourceType);
      if (index === undefined) {
        index = { literal: new Map(), prefixed: new Map() };
        byType.set(binding.resourceType, index);
      }
      const map = binding.patternType === PatternType.PREFIXED ? index.prefixed : index.literal;
      const list = map.get(binding.resourceName) ?? [];
      list.push(binding);
      map.set(binding.resourceName, list);
    }
    this.all = bindings;
    this.byType = byType;
  }

  authorize(identity: ConnectionIdentity, operation: AclOperation, resourceType: ResourceType, name: string): boolean {
    if (this.superUsers.has(identity.principal)) return true;
    const acls = this.matchingAcls(resourceType, name);
    if (acls.length === 0) return this.allowEveryone;
    const host = normalizeHost(identity.clientHost);
    if (acls.some((binding) => entryApplies(binding, identity.principal, host, AclPermission.DENY, [operation]))) return false;
    const granting = grantingOperations(operation);
    return acls.some((binding) => entryApplies(binding, identity.principal, host, AclPermission.ALLOW, granting));
  }

  /**
   * Allowed on some resource of the type: an ALLOW pattern (for the operation or ALL) that no
   * DENY covers — a LITERAL `*` deny covers all, a PREFIXED deny covers the literals and
   * prefixes that start with it, a LITERAL deny the same literal. With
   * allow.everyone.if.no.acl.found, anything short of a `*` deny is allowed (Kafka's rule).
   */
  authorizeAny(identity: ConnectionIdentity, operation: AclOperation, resourceType: ResourceType): boolean {
    if (this.superUsers.has(identity.principal)) return true;
    const host = normalizeHost(identity.clientHost);
    const index = this.byType.get(resourceType);
    const patterns = (permission: AclPermission, patternType: PatternType): string[] => {
      const map = patternType === PatternType.PREFIXED ? index?.prefixed : index?.literal;
      const names: string[] = [];
      for (const [name, bindings] of map ?? []) if (bindings.some((binding) => entryApplies(binding, identity.principal, host, permission, [operation]))) names.push(name);
      return names;
    };
    const denyLiterals = patterns(AclPermission.DENY, PatternType.LITERAL);
    if (denyLiterals.includes(WILDCARD_RESOURCE)) return false;
    if (this.allowEveryone) return true;
    const denyPrefixes = patterns(AclPermission.DENY, PatternType.PREFIXED);
    const deniedByPrefix = (name: string): boolean => denyPrefixes.some((prefix) => name.startsWith(prefix));
    const allowPrefixes = patterns(AclPermission.ALLOW, PatternType.PREFIXED);
    const allowLiterals = patterns(AclPermission.ALLOW, PatternType.LITERAL);
    return (
      allowPrefixes.some((prefix) => !deniedByPrefix(prefix)) ||
      allowLiterals.some((literal) => literal === WILDCARD_RESOURCE || (!denyLiterals.includes(literal) && !deniedByPrefix(literal)))
    );
  }

  private matchingAcls(resourceType: ResourceType, name: string): AclBinding[] {
    const index = this.byType.get(resourceType);
    if (index === undefined) return [];
    const acls = [...(index.literal.get(name) ?? []), ...(name === WILDCARD_RESOURCE ? [] : (index.literal.get(WILDCARD_RESOURCE) ?? []))];
    for (const [prefix, bindings] of index.prefixed) if (name.startsWith(prefix)) acls.push(...bindings);
    return acls;
  }

  private rebuild(): void {
    this.setBindings([...this.cache.all()].flatMap(storedToBindings));
  }
}
