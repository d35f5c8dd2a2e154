/**
 * Who a request comes from, as handlers see it (RequestContext.identity), through the real
 * listener (BrokerServer) and connection: ANONYMOUS on PLAINTEXT, `User:<name>` after a SASL
 * exchange, `User:<certificate subject>` on an SSL listener with client certificates — each with
 * the listener's name and protocol. A stand-in Metadata handler answers with the identity it saw.
 */
import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { RequestRouter, type ApiHandler } from '../../../../src/broker/router.js';
import type { ConnectionListener } from '../../../../src/broker/connection.js';
import { BrokerServer, type TlsListenerOptions } from '../../../../src/broker/server.js';
import { createLogger } from '../../../../src/common/logger.js';
import { MetadataApi, type MetadataRequest, type MetadataResponse } from '../../../../src/protocol/apis/metadata.js';
import { scramCredential } from '../../../../src/protocol/sasl/scram.js';
import { testCertificates } from '../../../support/certificates.js';
import { Conversation } from '../../../support/conversation.js';
import { METADATA_ALL, scramLogin } from '../../../support/sasl-conversation.js';

const silent = createLogger({ name: 'identity-test', level: 'silent' });
const servers: BrokerServer[] = [];
const conversations: Conversation[] = [];
afterEach(async () => {
  for (const conversation of conversations.splice(0)) conversation.close();
  await Promise.all(servers.splice(0).map((server) => server.stop(0)));
});

const whoAmI: ApiHandler<MetadataRequest, MetadataResponse> = {
  api: MetadataApi,
  async handle(_request, _version, context) {
    const { principal, listenerName, securityProtocol, clientHost } = context.identity;
    return {
      throttleTimeMs: 0,
      brokers: [{ nodeId: 0, host: `${principal}|${listenerName}|${securityProtocol}|${clientHost}`, port: 1, rack: null }],
      clusterId: null,
      controllerId: 0,
      topics: [],
      clusterAuthorizedOperations: 0,
    };
  },
};

async function listen(listener: ConnectionListener, tls?: TlsListenerOptions): Promise<number> {
  const router = new RequestRouter([whoAmI], silent);
  router.open();
  const server = await BrokerServer.listen({ host: '127.0.0.1', port: 0 }, router, { maxRequestBytes: 1 << 20, idleTimeoutMs: 60_000, logger: silent, listener }, tls);
  servers.push(server);
  return server.address.port;
}

async function identity(conversation: Conversation): Promise<string> {
  conversations.push(conversation);
  return (await conversation.request(MetadataApi, 1, METADATA_ALL)).brokers[0]?.host ?? '';
}

const certificates = testCertificates();
const credential = scramCredential('SCRAM-SHA-256', 'eve-pw');

describe('RequestContext.identity', () => {
  it('is ANONYMOUS on a PLAINTEXT listener', async () => {
    const port = await listen({ name: 'INTERNAL', securityProtocol: 'PLAINTEXT' });
    expect(await identity(await Conversation.open(port))).toBe('User:ANONYMOUS|INTERNAL|PLAINTEXT|127.0.0.1');
  });

  it('is the SASL user once authenticated', async () => {
    const port = await listen({
      name: 'CLIENTS',
      securityProtocol: 'SASL_PLAINTEXT',
      sasl: {
        listenerName: 'CLIENTS',
        mechanisms: ['SCRAM-SHA-256'],
        credentials: { credential: (user, mechanism) => (user === 'eve' && mechanism === 'SCRAM-SHA-256' ? credential : undefined) },
        failedAuthenticationDelayMs: 0,
        maxReceiveBytes: 4096,
        logger: silent,
      },
    });
    const conversation = await Conversation.open(port);
    expect((await scramLogin(conversation, 'SCRAM-SHA-256', 'eve', 'eve-pw')).errorCode).toBe(0);
    expect(await identity(conversation)).toBe('User:eve|CLIENTS|SASL_PLAINTEXT|127.0.0.1');
  });

  it('is the client certificate subject on an SSL listener with client certificates', async () => {
    const port = await listen(
      { name: 'SSL', securityProtocol: 'SSL' },
      { settings: { keystore: certificates.broker, keyPassword: undefined, truststore: certificates.ca, clientAuth: 'required' } },
    );
    const client = readFileSync(certificates.client);
    const conversation = await Conversation.openTls(port, { ca: readFileSync(certificates.ca), servername: 'localhost', key: client, cert: client });
    expect(await identity(conversation)).toBe('User:CN=client,O=Tributary|SSL|SSL|127.0.0.1');
  });

  it('is ANONYMOUS on an SSL listener that asks for no certificate', async () => {
    const port = await listen({ name: 'SSL', securityProtocol: 'SSL' }, { settings: { keystore: certificates.broker, keyPassword: undefined, truststore: undefined, clientAuth: 'none' } });
    const conversation = await Conversation.openTls(port, { ca: readFileSync(certificates.ca), servername: 'localhost' });
    expect(await identity(conversation)).toBe('User:ANONYMOUS|SSL|SSL|127.0.0.1');
  });
});
