/**
 * Kafka's AclAuthorizer rules (broker/security/authorizer.ts) on bindings set directly, then the
 * same authorizer fed by the coordination store through its watched cache.
 */
import { describe, expect, it } from 'vitest';
import { AclOperation, AclPermission, PatternType, ResourceType, type AclBinding } from '../../../../src/broker/security/acl.js';
import { addAcls, removeAcls } from '../../../../src/broker/security/acl-admin.js';
import { AclAuthorizer, AllowAllAuthorizer, createAuthorizer, parseSuperUsers } from '../../../../src/broker/security/authorizer.js';
import { createLogger } from '../../../../src/common/logger.js';
import { MemoryCoordination } from '../../../../src/coordination/memory-store.js';
import { identityOf } from '../../../support/routed-requests.js';

const logger = createLogger({ name: 'authorizer-test', level: 'silent' });
const alice = identityOf('User:alice');
const bob = identityOf('User:bob');
const { TOPIC, GROUP, CLUSTER } = ResourceType;
const { READ, WRITE, DESCRIBE, DELETE, ALTER, CREATE, ALL, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE } = AclOperation;

function acl(resourceType: ResourceType, resourceName: string, operation: AclOperation, options: Partial<AclBinding> = {}): AclBinding {
  return { resourceType, resourceName, patternType: PatternType.LITERAL, principal: 'User:alice', host: '*', operation, permission: AclPermission.ALLOW, ...options };
}

function authorizer(bindings: AclBinding[], options: { superUsers?: string; allowEveryone?: boolean } = {}): AclAuthorizer {
  const built = new AclAuthorizer({ superUsers: options.superUsers ?? '', allowEveryoneIfNoAclFound: options.allowEveryone ?? false, store: new MemoryCoordination().session(), logger });
  built.setBindings(bindings);
  return built;
}

describe('AclAuthorizer.authorize', () => {
  it('refuses a resource without ACLs, unless allow.everyone.if.no.acl.found — which any ACL on it turns off', () => {
    expect(authorizer([]).authorize(alice, READ, TOPIC, 'orders')).toBe(false);
    const open = authorizer([acl(TOPIC, 'orders', READ)], { allowEveryone: true });
    expect(open.authorize(bob, READ, TOPIC, 'clicks')).toBe(true);
    expect(open.authorize(bob, READ, TOPIC, 'orders')).toBe(false);
  });

  it('allows a matching ALLOW entry for that operation only', () => {
    const auth = authorizer([acl(TOPIC, 'orders', READ)]);
    expect(auth.authorize(alice, READ, TOPIC, 'orders')).toBe(true);
    expect(auth.authorize(alice, WRITE, TOPIC, 'orders')).toBe(false);
    expect(auth.authorize(bob, READ, TOPIC, 'orders')).toBe(false);
    expect(auth.authorize(alice, READ, TOPIC, 'orders2')).toBe(false);
    expect(auth.authorize(alice, READ, GROUP, 'orders')).toBe(false);
  });

  it('deny beats allow, also an ALLOW of ALL on every topic', () => {
    const auth = authorizer([acl(TOPIC, '*', ALL), acl(TOPIC, 'secret', READ, { permission: AclPermission.DENY })]);
    expect(auth.authorize(alice, READ, TOPIC, 'orders')).toBe(true);
    expect(auth.authorize(alice, READ, TOPIC, 'secret')).toBe(false);
    expect(auth.authorize(alice, WRITE, TOPIC, 'secret')).toBe(true);
    const denyAll = authorizer([acl(TOPIC, 'orders', READ), acl(TOPIC, 'orders', ALL, { permission: AclPermission.DENY })]);
    expect(denyAll.authorize(alice, READ, TOPIC, 'orders')).toBe(false);
  });

  it('super users pass everything, deny entries included', () => {
    const auth = authorizer([acl(TOPIC, 'orders', ALL, { principal: 'User:root', permission: AclPermission.DENY })], { superUsers: 'User:root; User:ops' });
    expect(auth.authorize(identityOf('User:root'), DELETE, TOPIC, 'orders')).toBe(true);
    expect(auth.authorize(identityOf('User:ops'), ALTER, CLUSTER, 'kafka-cluster')).toBe(true);
    expect(parseSuperUsers(' User:a ;;User:b ')).toEqual(new Set(['User:a', 'User:b']));
  });

  it('matches principal User:* and host * or the exact client address', () => {
    const auth = authorizer([acl(TOPIC, 'orders', READ, { principal: 'User:*' }), acl(TOPIC, 'logs', READ, { host: '10.0.0.1' })]);
    expect(auth.authorize(bob, READ, TOPIC, 'orders')).toBe(true);
    expect(auth.authorize(identityOf('User:alice', '10.0.0.1'), READ, TOPIC, 'logs')).toBe(true);
    expect(auth.authorize(identityOf('User:alice', '::ffff:10.0.0.1'), READ, TOPIC, 'logs')).toBe(true);
    expect(auth.authorize(identityOf('User:alice', '10.0.0.2'), READ, TOPIC, 'logs')).toBe(false);
  });

  it('matches the LITERAL * and PREFIXED patterns of the resource type', () => {
    const auth = authorizer([acl(TOPIC, 'logs-', WRITE, { patternType: PatternType.PREFIXED }), acl(GROUP, '*', READ)]);
    expect(auth.authorize(alice, WRITE, TOPIC, 'logs-app')).toBe(true);
    expect(auth.authorize(alice, WRITE, TOPIC, 'logs-')).toBe(true);
    expect(auth.authorize(alice, WRITE, TOPIC, 'logs')).toBe(false);
    expect(auth.authorize(alice, WRITE, TOPIC, 'applogs-')).toBe(false);
    expect(auth.authorize(alice, READ, GROUP, 'any-group')).toBe(true);
    // A prefixed DENY refuses what a literal ALLOW grants.
    const denied = authorizer([acl(TOPIC, 'logs-app', WRITE), acl(TOPIC, 'logs-', WRITE, { patternType: PatternType.PREFIXED, permission: AclPermission.DENY })]);
    expect(denied.authorize(alice, WRITE, TOPIC, 'logs-app')).toBe(false);
  });

  it('implies DESCRIBE from READ, WRITE, DELETE, ALTER; DESCRIBE_CONFIGS from ALTER_CONFIGS; everything from ALL', () => {
    for (const operation of [READ, WRITE, DELETE, ALTER]) expect(authorizer([acl(TOPIC, 't', operation)]).authorize(alice, DESCRIBE, TOPIC, 't')).toBe(true);
    expect(authorizer([acl(TOPIC, 't', CREATE)]).authorize(alice, DESCRIBE, TOPIC, 't')).toBe(false);
    expect(authorizer([acl(TOPIC, 't', ALTER_CONFIGS)]).authorize(alice, DESCRIBE_CONFIGS, TOPIC, 't')).toBe(true);
    expect(authorizer([acl(TOPIC, 't', ALTER)]).authorize(alice, ALTER_CONFIGS, TOPIC, 't')).toBe(false);
    expect(authorizer([acl(TOPIC, 't', DESCRIBE)]).authorize(alice, READ, TOPIC, 't')).toBe(false);
    for (const operation of [READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS]) {
      expect(authorizer([acl(TOPIC, 't', ALL)]).authorize(alice, operation, TOPIC, 't')).toBe(true);
    }
    // Implication grants only: a DENY of READ does not deny DESCRIBE, a DENY of DESCRIBE does.
    expect(authorizer([acl(TOPIC, 't', WRITE), acl(TOPIC, 't', READ, { permission: AclPermission.DENY })]).authorize(alice, DESCRIBE, TOPIC, 't')).toBe(true);
    expect(authorizer([acl(TOPIC, 't', READ), acl(TOPIC, 't', DESCRIBE, { permission: AclPermission.DENY })]).authorize(alice, DESCRIBE, TOPIC, 't')).toBe(false);
  });
});

describe('AclAuthorizer.authorizeAny (InitProducerId without IDEMPOTENT_WRITE)', () => {
  it('allows WRITE on some topic, unless a deny covers every allowed pattern', () => {
    expect(authorizer([]).authorizeAny(alice, WRITE, TOPIC)).toBe(false);
    expect(authorizer([acl(TOPIC, 'orders', WRITE)]).authorizeAny(alice, WRITE, TOPIC)).toBe(true);
    expect(authorizer([acl(TOPIC, 'orders', READ)]).authorizeAny(alice, WRITE, TOPIC)).toBe(false);
    expect(authorizer([acl(TOPIC, 'orders', WRITE)]).authorizeAny(bob, WRITE, TOPIC)).toBe(false);
    expect(authorizer([acl(TOPIC, 'orders', WRITE), acl(TOPIC, 'orders', WRITE, { permission: AclPermission.DENY })]).authorizeAny(alice, WRITE, TOPIC)).toBe(false);
    expect(authorizer([acl(TOPIC, 'orders', WRITE), acl(TOPIC, 'ord', WRITE, { patternType: PatternType.PREFIXED, permission: AclPermission.DENY })]).authorizeAny(alice, WRITE, TOPIC)).toBe(false);
    expect(authorizer([acl(TOPIC, 'orders', WRITE), acl(TOPIC, 'clicks', ALL)]).authorizeAny(alice, WRITE, TOPIC)).toBe(true);
    expect(authorizer([acl(TOPIC, 'logs-', WRITE, { patternType: PatternType.PREFIXED })]).authorizeAny(alice, WRITE, TOPIC)).toBe(true);
  });

  it('with allow.everyone.if.no.acl.found only a deny on * refuses; super users always pass', () => {
    expect(authorizer([], { allowEveryone: true }).authorizeAny(alice, WRITE, TOPIC)).toBe(true);
    expect(authorizer([acl(TOPIC, '*', WRITE, { permission: AclPermission.DENY, principal: 'User:*' })], { allowEveryone: true }).authorizeAny(alice, WRITE, TOPIC)).toBe(false);
    expect(authorizer([], { superUsers: 'User:alice' }).authorizeAny(alice, IDEMPOTENT_WRITE, CLUSTER)).toBe(true);
  });
});

describe('authorizer kinds and the store', () => {
  it('authorizer=none allows everything and reports itself disabled', () => {
    const none = createAuthorizer({ kind: 'none', superUsers: '', allowEveryoneIfNoAclFound: false, store: new MemoryCoordination().session(), logger });
    expect(none).toBeInstanceOf(AllowAllAuthorizer);
    expect([none.enabled, none.authorize(bob, DELETE, CLUSTER, 'kafka-cluster'), none.authorizeAny(bob, WRITE, TOPIC)]).toEqual([false, true, true]);
  });

  it('follows the coordination store through its watches: adds and removes by another session', async () => {
    const coordination = new MemoryCoordination();
    const auth = createAuthorizer({ kind: 'acl', superUsers: '', allowEveryoneIfNoAclFound: false, store: coordination.session(), logger });
    await auth.start();
    const admin = coordination.session();
    const until = async (condition: () => boolean): Promise<void> => {
      for (let i = 0; i < 200 && !condition(); i += 1) await new Promise((resolve) => setTimeout(resolve, 5));
      expect(condition()).toBe(true);
    };
    try {
      expect(auth.authorize(alice, READ, TOPIC, 'orders')).toBe(false);
      expect(await addAcls(admin, [acl(TOPIC, 'orders', READ), acl(TOPIC, 'logs-', WRITE, { patternType: PatternType.PREFIXED })])).toEqual([undefined, undefined]);
      await until(() => auth.authorize(alice, READ, TOPIC, 'orders') && auth.authorize(alice, WRITE, TOPIC, 'logs-x'));
      expect(auth.bindings()).toHaveLength(2);
      await removeAcls(admin, [{ resourceType: TOPIC, resourceName: 'orders', patternType: PatternType.LITERAL, principal: null, host: null, operation: AclOperation.ANY, permission: AclPermission.ANY }]);
      await until(() => !auth.authorize(alice, READ, TOPIC, 'orders'));
      expect(auth.authorize(alice, WRITE, TOPIC, 'logs-x')).toBe(true);
    } finally {
      auth.stop();
    }
  });
});
