/**
 * kafka-acls.sh (Apache Kafka 3.9.1's kafka.admin.AclCommand, in the broker's jar) against a
 * Tributary broker with authorizer=acl: --add, --list and --remove over DescribeAcls, CreateAcls
 * and DeleteAcls. The broker's PLAINTEXT listener sees the tool as User:ANONYMOUS, made a super
 * user here so it may manage ACLs; what the tool did is read back from the broker (DescribeAcls
 * routed as the super user, answered from the cache the store's watches keep).
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { AclOperation, AclPermission, PatternType, ResourceType } from '../../src/broker/security/acl.js';
import { DescribeAclsApi } from '../../src/protocol/apis/describe-acls.js';
import { ensureJars, KAFKA_SERVER_JARS } from '../services/service-jars.js';
import { startInProcessBroker, type InProcessBroker } from '../support/brokers.js';
import { describeRun, runKafkaTool, type JavaToolResult } from '../support/java.js';
import { identityOf, RoutedClient } from '../support/routed-requests.js';

const { runDir } = inject('compat');

let broker: InProcessBroker;
let kafkaServerDir: string;

beforeAll(async () => {
  kafkaServerDir = await ensureJars(KAFKA_SERVER_JARS);
  broker = await startInProcessBroker({ authorizer: 'acl', 'super.users': 'User:ANONYMOUS' });
});

afterAll(async () => {
  await broker?.stop();
  expect(broker?.logLines.filter((line) => Number(line['level']) >= 50) ?? []).toEqual([]);
});

/** Every ACL the broker holds, flattened to one row each. */
async function stored(): Promise<{ resourceType: number; resourceName: string; patternType: number; principal: string; host: string; operation: number; permission: number }[]> {
  const admin = new RoutedClient(broker.broker.requestRouter, identityOf('User:ANONYMOUS'));
  const answer = await admin.request(DescribeAclsApi, 1, { resourceTypeFilter: 1, resourceNameFilter: null, patternTypeFilter: 1, principalFilter: null, hostFilter: null, operation: 1, permissionType: 1 });
  expect(answer.errorCode).toBe(0);
  return answer.resources.flatMap((resource) =>
    resource.acls.map((acl) => ({ resourceType: resource.resourceType, resourceName: resource.resourceName, patternType: resource.patternType, principal: acl.principal, host: acl.host, operation: acl.operation, permission: acl.permissionType })),
  );
}

async function acls(args: readonly string[]): Promise<JavaToolResult> {
  const result = await runKafkaTool('kafka.admin.AclCommand', ['--bootstrap-server', broker.bootstrap, ...args], { kafkaToolsDir: kafkaServerDir, runDir, timeoutMs: 100_000 });
  expect(result.stderr.split('\n').filter((line) => / (WARN|ERROR) /.test(line)), describeRun(result)).toEqual([]);
  expect(result.status, describeRun(result)).toBe(0);
  return result;
}

describe('kafka-acls.sh --bootstrap-server', () => {
  it('adds literal and prefixed ACLs, which the broker then holds', async () => {
    await acls(['--add', '--allow-principal', 'User:alice', '--operation', 'Read', '--operation', 'Describe', '--topic', 'orders']);
    await acls(['--add', '--deny-principal', 'User:mallory', '--deny-host', '10.0.0.9', '--operation', 'All', '--group', 'billing']);
    await acls(['--add', '--allow-principal', 'User:etl', '--operation', 'Write', '--topic', 'logs-', '--resource-pattern-type', 'prefixed']);
    const held = await stored();
    expect(held).toEqual(
      expect.arrayContaining([
        { resourceType: ResourceType.TOPIC, resourceName: 'orders', patternType: PatternType.LITERAL, principal: 'User:alice', host: '*', operation: AclOperation.READ, permission: AclPermission.ALLOW },
        { resourceType: ResourceType.TOPIC, resourceName: 'orders', patternType: PatternType.LITERAL, principal: 'User:alice', host: '*', operation: AclOperation.DESCRIBE, permission: AclPermission.ALLOW },
        { resourceType: ResourceType.GROUP, resourceName: 'billing', patternType: PatternType.LITERAL, principal: 'User:mallory', host: '10.0.0.9', operation: AclOperation.ALL, permission: AclPermission.DENY },
        { resourceType: ResourceType.TOPIC, resourceName: 'logs-', patternType: PatternType.PREFIXED, principal: 'User:etl', host: '*', operation: AclOperation.WRITE, permission: AclPermission.ALLOW },
      ]),
    );
    expect(held).toHaveLength(4);
  });

  it('lists them, all or by resource and pattern type', async () => {
    const all = await acls(['--list']);
    expect(all.stdout).toContain('ResourcePattern(resourceType=TOPIC, name=orders, patternType=LITERAL)');
    expect(all.stdout).toContain('(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)');
    expect(all.stdout).toContain('(principal=User:mallory, host=10.0.0.9, operation=ALL, permissionType=DENY)');
    expect(all.stdout).toContain('ResourcePattern(resourceType=TOPIC, name=logs-, patternType=PREFIXED)');
    const prefixed = await acls(['--list', '--topic', 'logs-', '--resource-pattern-type', 'prefixed']);
    expect(prefixed.stdout).toContain('(principal=User:etl, host=*, operation=WRITE, permissionType=ALLOW)');
    expect(prefixed.stdout).not.toContain('User:alice');
  });

  it('removes the ACLs of a resource (--remove --force)', async () => {
    await acls(['--remove', '--force', '--topic', 'orders']);
    const left = await stored();
    expect(left.map((binding) => binding.resourceName).sort()).toEqual(['billing', 'logs-']);
    const listed = await acls(['--list', '--topic', 'orders']);
    expect(listed.stdout).not.toContain('User:alice');
  });
});
