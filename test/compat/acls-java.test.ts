/**
 * kafka-acls.sh (Apache Kafka 3.9.1's kafka.admin.AclCommand, in the broker's jar) against a
 * Tributary broker with authorizer=acl: --add, --list and --remove over DescribeAcls, CreateAcls
 * and DeleteAcls. The broker's PLAINTEXT listener sees the tool as User:ANONYMOUS, made a super
 * user here so it may manage ACLs; what the tool did is read back from the broker (DescribeAcls
 * routed as the super user, answered from the cache the store's watches keep).
 *
 * Then the Java clients as a principal with ACLs (User:ANONYMOUS, given them by a super user): the
 * idempotent producer gets its producer id from WRITE on a topic (Kafka 2.8+) and writes there,
 * is told it is not authorized elsewhere; the group consumer reads in its group and is refused
 * another.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { AclOperation, AclPermission, PatternType, ResourceType } from '../../src/broker/security/acl.js';
import { CreateAclsApi, CreateTopicsApi, DescribeAclsApi } from '../../src/protocol/apis/index.js';
import { ensureJars, KAFKA_SERVER_JARS } from '../services/service-jars.js';
import { startInProcessBroker, type InProcessBroker } from '../support/brokers.js';
import { describeRun, runKafkaTool, type JavaToolResult } from '../support/java.js';
import { identityOf, RoutedClient } from '../support/routed-requests.js';

const { runDir, kafkaToolsDir } = inject('compat');

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

describe('the Java clients under ACLs (as User:ANONYMOUS)', () => {
  let guarded: InProcessBroker;

  beforeAll(async () => {
    guarded = await startInProcessBroker({ authorizer: 'acl', 'super.users': 'User:admin', 'num.partitions': '1', 'group.initial.rebalance.delay.ms': '0' });
    const admin = new RoutedClient(guarded.broker.requestRouter, identityOf('User:admin'));
    const created = await admin.request(CreateTopicsApi, 4, {
      topics: ['open', 'closed'].map((name) => ({ name, numPartitions: 1, replicationFactor: 1, assignments: [], configs: [] })),
      timeoutMs: 10_000,
      validateOnly: false,
    });
    expect(created.topics.map((topic) => topic.errorCode)).toEqual([0, 0]);
    const anonymous = (resourceType: number, resourceName: string, operation: number) => ({ resourceType, resourceName, resourcePatternType: 3, principal: 'User:ANONYMOUS', host: '*', operation, permissionType: 3 });
    const granted = await admin.request(CreateAclsApi, 1, {
      creations: [anonymous(ResourceType.TOPIC, 'open', AclOperation.WRITE), anonymous(ResourceType.TOPIC, 'open', AclOperation.READ), anonymous(ResourceType.GROUP, 'readers', AclOperation.READ)],
    });
    expect(granted.results.map((result) => result.errorCode)).toEqual([0, 0, 0]);
  });

  afterAll(async () => {
    await guarded?.stop();
    // Refusals are answers, not failures: nothing was logged as an error.
    expect(guarded?.logLines.filter((line) => Number(line['level']) >= 50) ?? []).toEqual([]);
  });

  function run(mainClass: string, args: readonly string[]): Promise<JavaToolResult> {
    return runKafkaTool(mainClass, args, { kafkaToolsDir, runDir, timeoutMs: 100_000 });
  }

  it('the idempotent producer writes to a topic it may WRITE (its producer id granted by that), and is refused another', async () => {
    const allowed = await run('org.apache.kafka.tools.ProducerPerformance', [
      '--topic', 'open', '--num-records', '50', '--record-size', '100', '--throughput', '-1',
      '--producer-props', `bootstrap.servers=${guarded.bootstrap}`, 'acks=all',
    ]);
    expect(allowed.status, describeRun(allowed)).toBe(0);
    expect(allowed.stdout, describeRun(allowed)).toMatch(/^50 records sent/m);
    expect(guarded.broker.logManager.getLog('open', 0)?.logEndOffset).toBe(50);

    const refused = await run('org.apache.kafka.tools.ProducerPerformance', [
      '--topic', 'closed', '--num-records', '1', '--record-size', '100', '--throughput', '-1',
      '--producer-props', `bootstrap.servers=${guarded.bootstrap}`, 'acks=all', 'max.block.ms=20000',
    ]);
    expect(`${refused.stdout}${refused.stderr}`, describeRun(refused)).toContain('Not authorized to access topics: [closed]');
    expect(guarded.broker.logManager.getLog('closed', 0)?.logEndOffset ?? 0).toBe(0);
  });

  it('the group consumer reads in a group it may READ, and is refused another group', async () => {
    const read = await run('org.apache.kafka.tools.consumer.ConsoleConsumer', [
      '--bootstrap-server', guarded.bootstrap, '--topic', 'open', '--group', 'readers', '--from-beginning', '--max-messages', '50', '--timeout-ms', '60000',
    ]);
    expect(read.status, describeRun(read)).toBe(0);
    expect(read.stdout.split('\n').filter((line) => line !== ''), describeRun(read)).toHaveLength(50);

    const refused = await run('org.apache.kafka.tools.consumer.ConsoleConsumer', [
      '--bootstrap-server', guarded.bootstrap, '--topic', 'open', '--group', 'others', '--from-beginning', '--max-messages', '1', '--timeout-ms', '20000',
    ]);
    // ConsoleConsumer ends with status 0 even so; what it says is the check.
    expect(refused.stderr, describeRun(refused)).toContain('GroupAuthorizationException: Not authorized to access group: others');
    expect(refused.stderr, describeRun(refused)).toContain('Processed a total of 0 messages');
  });
});
