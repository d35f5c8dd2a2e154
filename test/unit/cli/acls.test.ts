/** `tributary acls`: kafka-acls.sh's flags turned into bindings and filters, against an in-process store. */
import { describe, expect, it } from 'vitest';
import { AclOperation, AclPermission, PatternType, ResourceType } from '../../../src/broker/security/acl.js';
import { addAclsWith, bindingsToAdd, filtersOf, listAclsWith, removeAclsWith, type AclsOptions } from '../../../src/cli/commands/acls.js';
import { MemoryCoordination } from '../../../src/coordination/memory-store.js';

function io(): { out: string[]; err: string[]; writeOut: (text: string) => void; writeErr: (text: string) => void } {
  const out: string[] = [];
  const err: string[] = [];
  return { out, err, writeOut: (text) => void out.push(text), writeErr: (text) => void err.push(text) };
}

const base: AclsOptions = { zookeeper: 'unused:2181' };

describe('tributary acls flags', () => {
  it('add: every principal × host × operation on every resource, All when no operation is named', () => {
    const bindings = bindingsToAdd({ ...base, allowPrincipal: ['User:a', 'User:b'], operation: ['read', 'DescribeConfigs'], topic: ['orders'], group: ['billing'] });
    expect(bindings).toHaveLength(8);
    expect(bindings[0]).toEqual({ resourceType: ResourceType.TOPIC, resourceName: 'orders', patternType: PatternType.LITERAL, principal: 'User:a', host: '*', operation: AclOperation.READ, permission: AclPermission.ALLOW });
    expect(bindingsToAdd({ ...base, denyPrincipal: ['User:m'], denyHost: ['10.0.0.1'], cluster: true, resourcePatternType: 'literal' })).toEqual([
      { resourceType: ResourceType.CLUSTER, resourceName: 'kafka-cluster', patternType: PatternType.LITERAL, principal: 'User:m', host: '10.0.0.1', operation: AclOperation.ALL, permission: AclPermission.DENY },
    ]);
  });

  it('add refuses what kafka-acls.sh refuses: no resource, no principal, a bad operation or principal, match patterns', () => {
    expect(() => bindingsToAdd({ ...base, allowPrincipal: ['User:a'] })).toThrow(/--topic, --group or --cluster/);
    expect(() => bindingsToAdd({ ...base, topic: ['t'] })).toThrow(/--allow-principal or --deny-principal/);
    expect(() => bindingsToAdd({ ...base, topic: ['t'], allowPrincipal: ['User:a'], operation: ['Frobnicate'] })).toThrow(/unknown --operation/);
    expect(() => bindingsToAdd({ ...base, topic: ['t'], allowPrincipal: ['alice'] })).toThrow(/User:<name>/);
    expect(() => bindingsToAdd({ ...base, topic: ['t'], allowPrincipal: ['User:a'], resourcePatternType: 'match' })).toThrow(/literal, prefixed/);
  });

  it('remove / list: flags left out match anything', () => {
    expect(filtersOf(base)).toEqual([{ resourceType: ResourceType.ANY, resourceName: null, patternType: PatternType.ANY, principal: null, host: null, operation: AclOperation.ANY, permission: AclPermission.ANY }]);
    expect(filtersOf({ ...base, topic: ['orders'], principal: ['User:a'] })).toEqual([
      { resourceType: ResourceType.TOPIC, resourceName: 'orders', patternType: PatternType.LITERAL, principal: 'User:a', host: null, operation: AclOperation.ANY, permission: AclPermission.ANY },
    ]);
  });

  it('adds, lists and removes ACLs in the store', async () => {
    const store = new MemoryCoordination().session();
    const added = io();
    await addAclsWith(store, added, { ...base, allowPrincipal: ['User:etl'], operation: ['Write'], topic: ['logs-'], resourcePatternType: 'prefixed' });
    await addAclsWith(store, io(), { ...base, allowPrincipal: ['User:alice'], operation: ['Read'], topic: ['orders'] });
    expect(added.out.join('')).toContain('Added 1 ACL.');
    const listed = io();
    await listAclsWith(store, listed, base);
    expect(listed.out.join('')).toBe(
      'Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name=orders, patternType=LITERAL)`:\n' +
        '\t(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)\n\n' +
        'Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name=logs-, patternType=PREFIXED)`:\n' +
        '\t(principal=User:etl, host=*, operation=WRITE, permissionType=ALLOW)\n\n',
    );
    const removed = io();
    await removeAclsWith(store, removed, { ...base, topic: ['logs-'], resourcePatternType: 'prefixed' });
    expect(removed.out[0]).toBe('Removed 1 ACL.\n');
    const after = io();
    await listAclsWith(store, after, { ...base, principal: ['User:etl'] });
    expect(after.out.join('')).toBe('No ACLs match.\n');
  });
});
