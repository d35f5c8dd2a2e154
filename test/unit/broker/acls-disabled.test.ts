/**
 * Without an authorizer (authorizer=none, the default) a broker serves everyone as before, and the
 * ACL APIs answer SECURITY_DISABLED (as Kafka does) without touching the store.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Broker } from '../../../src/broker/broker.js';
import { parseBrokerConfig } from '../../../src/broker/config.js';
import { createLogger } from '../../../src/common/logger.js';
import { MemoryCoordination } from '../../../src/coordination/memory-store.js';
import { CreateAclsApi, DeleteAclsApi, DescribeAclsApi, InitProducerIdApi } from '../../../src/protocol/apis/index.js';
import { KafkaErrorCode } from '../../../src/protocol/kafka-errors.js';
import { identityOf, RoutedClient } from '../../support/routed-requests.js';

const coordination = new MemoryCoordination();
let broker: Broker;

beforeAll(async () => {
  broker = await Broker.start({
    id: 1,
    listen: { host: '127.0.0.1', port: 0 },
    dataDir: mkdtempSync(join(tmpdir(), 'tributary-acls-disabled-')),
    config: parseBrokerConfig({}, 'test settings'),
    store: coordination.session(),
    logger: createLogger({ name: 'acls-disabled', level: 'silent' }),
    clusterId: 'acls-disabled',
  });
});

afterAll(async () => {
  await broker?.stop();
});

describe('authorizer=none', () => {
  it('answers DescribeAcls, CreateAcls and DeleteAcls with SECURITY_DISABLED and stores nothing', async () => {
    const client = new RoutedClient(broker.requestRouter, identityOf('User:anyone'));
    const filter = { resourceTypeFilter: 1, resourceNameFilter: null, patternTypeFilter: 1, principalFilter: null, hostFilter: null, operation: 1, permissionType: 1 };
    for (const version of [0, 1]) {
      expect((await client.request(DescribeAclsApi, version, filter)).errorCode).toBe(KafkaErrorCode.SECURITY_DISABLED);
      const created = await client.request(CreateAclsApi, version, { creations: [{ resourceType: 2, resourceName: 't', resourcePatternType: 3, principal: 'User:a', host: '*', operation: 3, permissionType: 3 }] });
      expect(created.results.map((result) => result.errorCode)).toEqual([KafkaErrorCode.SECURITY_DISABLED]);
      const deleted = await client.request(DeleteAclsApi, version, { filters: [filter] });
      expect(deleted.filterResults.map((result) => result.errorCode)).toEqual([KafkaErrorCode.SECURITY_DISABLED]);
    }
    expect(await coordination.session().children('/kafka-acl/Topic')).toBeUndefined();
  });

  it('lets any principal do what needs a permission under acl (an idempotent producer id here)', async () => {
    const client = new RoutedClient(broker.requestRouter, identityOf('User:anyone'));
    expect((await client.request(InitProducerIdApi, 1, { transactionalId: null, transactionTimeoutMs: 60_000 })).errorCode).toBe(0);
  });
});
