/**
 * KafkaConnection with `security`: TLS from PEM files (chain and host name checked) and SASL
 * (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512) before the connection is handed out, against an in-test
 * server that speaks only ApiVersions and the SASL APIs (test/support/sasl-test-server.ts) with
 * the protocol layer's SCRAM server. Each failure must be final and say what to change.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { KafkaConnection } from '../../../src/client/connection.js';
import { clientSasl, clientTls, parseClientSecurity, type ClientTls, type SaslMechanismName } from '../../../src/client/security-config.js';
import { TributaryError } from '../../../src/common/errors.js';
import { ApiVersionsApi } from '../../../src/protocol/apis/api-versions.js';
import { testCertificates } from '../../support/certificates.js';
import { startSaslTestServer, type SaslTestServer, type SaslTestServerOptions } from '../../support/sasl-test-server.js';

const USER = 'mirror';
const PASSWORD = 'correct horse battery staple';

const servers: SaslTestServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

async function server(options: SaslTestServerOptions): Promise<SaslTestServer> {
  const started = await startSaslTestServer({ username: USER, password: PASSWORD, ...options });
  servers.push(started);
  return started;
}

function trusted(extra: { checkHostname?: boolean; keystore?: string } = {}): ClientTls {
  const { tls } = parseClientSecurity(
    {
      'security.protocol': 'SSL',
      'ssl.truststore.location': testCertificates().ca,
      ...(extra.keystore === undefined ? {} : { 'ssl.keystore.location': extra.keystore }),
      ...(extra.checkHostname === false ? { 'ssl.endpoint.identification.algorithm': '' } : {}),
    },
    { source: 'test', env: {} },
  );
  if (tls === undefined) throw new Error('SSL without TLS settings');
  return tls;
}

async function refusal(opening: Promise<KafkaConnection>): Promise<TributaryError> {
  try {
    (await opening).close();
  } catch (error) {
    expect(error).toBeInstanceOf(TributaryError);
    return error as TributaryError;
  }
  throw new Error('expected the connection to be refused');
}

describe('KafkaConnection over SASL_SSL', () => {
  it.each<SaslMechanismName>(['SCRAM-SHA-512', 'SCRAM-SHA-256', 'PLAIN'])('authenticates with %s before handing the connection out', async (mechanism) => {
    const broker = await server({ keystore: testCertificates().broker, mechanisms: ['SCRAM-SHA-512', 'SCRAM-SHA-256', 'PLAIN'] });
    for (const host of ['localhost', '127.0.0.1']) {
      const connection = await KafkaConnection.open(host, broker.port, { security: { tls: trusted(), sasl: clientSasl(mechanism, USER, PASSWORD) } });
      // Usable afterwards: the next request is served as an authenticated one.
      const versions = await connection.request(ApiVersionsApi, 1, {});
      expect(versions.errorCode).toBe(0);
      connection.close();
    }
    const rounds = mechanism === 'PLAIN' ? [36] : [36, 36];
    for (const conversation of broker.conversations) expect(conversation).toEqual([18, 17, ...rounds, 'auth', 18]);
  });

  it('a wrong password or an unknown user is refused for good, with the broker\'s message and what to check', async () => {
    const broker = await server({ keystore: testCertificates().broker, mechanisms: ['SCRAM-SHA-512', 'PLAIN'] });
    for (const [mechanism, username, password] of [
      ['SCRAM-SHA-512', USER, 'wrong'],
      ['SCRAM-SHA-512', 'nobody', PASSWORD],
      ['PLAIN', USER, 'wrong'],
    ] as const) {
      const error = await refusal(KafkaConnection.open('localhost', broker.port, { security: { tls: trusted(), sasl: clientSasl(mechanism, username, password) } }));
      expect(error.code).toBe('SASL_AUTHENTICATION_FAILED');
      expect(error.retriable).toBe(false);
      expect(error.message).toContain(`user "${username}"`);
      expect(error.message).toMatch(/Authentication failed: (invalid credentials with SASL mechanism SCRAM-SHA-512|Invalid username or password)/);
      expect(error.message).toContain('sasl.password.file');
      expect(error.message).not.toContain(PASSWORD);
    }
    expect(broker.conversations.every((conversation) => !conversation.includes('auth'))).toBe(true);
  });

  it('a mechanism the broker does not enable is refused, naming the ones it does', async () => {
    const broker = await server({ keystore: testCertificates().broker, mechanisms: ['SCRAM-SHA-512'] });
    const error = await refusal(KafkaConnection.open('localhost', broker.port, { security: { tls: trusted(), sasl: clientSasl('PLAIN', USER, PASSWORD) } }));
    expect(error.code).toBe('UNSUPPORTED_SASL_MECHANISM');
    expect(error.retriable).toBe(false);
    expect(error.message).toContain('enables SCRAM-SHA-512');
  });

  it('a port without SASL is refused, not half-authenticated', async () => {
    const broker = await server({ keystore: testCertificates().broker });
    const error = await refusal(KafkaConnection.open('localhost', broker.port, { security: { tls: trusted(), sasl: clientSasl('SCRAM-SHA-512', USER, PASSWORD) } }));
    expect(error.code).toBe('SASL_NOT_ENABLED');
    expect(broker.conversations).toEqual([[18]]);
  });
});

describe('KafkaConnection over SASL_PLAINTEXT', () => {
  it('runs SCRAM without TLS', async () => {
    const broker = await server({ mechanisms: ['SCRAM-SHA-256'] });
    const connection = await KafkaConnection.open('127.0.0.1', broker.port, { security: { sasl: clientSasl('SCRAM-SHA-256', USER, PASSWORD) } });
    connection.close();
    expect(broker.conversations[0]).toEqual([18, 17, 36, 36, 'auth']);
  });
});

describe('KafkaConnection TLS failures', () => {
  it('an untrusted broker certificate: set ssl.truststore.location', async () => {
    const broker = await server({ keystore: testCertificates().broker });
    const error = await refusal(KafkaConnection.open('localhost', broker.port, { security: { tls: clientTls({ checkHostname: true }) } }));
    expect(error.code).toBe('TLS_HANDSHAKE_FAILED');
    expect(error.retriable).toBe(false);
    expect(error.message).toContain('ssl.truststore.location');
  });

  it('a host name the certificate does not list, unless the check is turned off', async () => {
    // 127.0.0.2 is loopback too, but not in the certificate's SANs (localhost, 127.0.0.1).
    const broker = await server({ keystore: testCertificates().broker, host: '127.0.0.2' });
    const error = await refusal(KafkaConnection.open('127.0.0.2', broker.port, { security: { tls: trusted() } }));
    expect(error.code).toBe('TLS_HANDSHAKE_FAILED');
    expect(error.message).toContain('ssl.endpoint.identification.algorithm');
    (await KafkaConnection.open('127.0.0.2', broker.port, { security: { tls: trusted({ checkHostname: false }) } })).close();
  });

  it('an expired broker certificate', async () => {
    const broker = await server({ keystore: testCertificates().brokerExpired });
    const error = await refusal(KafkaConnection.open('localhost', broker.port, { security: { tls: trusted() } }));
    expect(error.code).toBe('TLS_HANDSHAKE_FAILED');
    expect(error.message).toContain('validity');
  });

  it('a plaintext port', async () => {
    const broker = await server({});
    const error = await refusal(KafkaConnection.open('127.0.0.1', broker.port, { security: { tls: trusted() } }));
    expect(error.code).toBe('TLS_HANDSHAKE_FAILED');
    expect(error.message).toContain('TLS listener');
  });

  it('presents the client certificate from ssl.keystore.location; without it a broker that requires one refuses', async () => {
    const certificates = testCertificates();
    const broker = await server({ keystore: certificates.broker, clientCa: certificates.ca, mechanisms: ['SCRAM-SHA-512'] });
    const connection = await KafkaConnection.open('localhost', broker.port, { security: { tls: trusted({ keystore: certificates.client }), sasl: clientSasl('SCRAM-SHA-512', USER, PASSWORD) } });
    connection.close();
    expect(broker.peerSubjects).toEqual(['client']);
    const error = await refusal(KafkaConnection.open('localhost', broker.port, { security: { tls: trusted(), sasl: clientSasl('SCRAM-SHA-512', USER, PASSWORD) } }));
    expect(error.code).toBe('TLS_HANDSHAKE_FAILED');
    expect(error.retriable).toBe(false);
    expect(error.message).toContain('client certificate');
  });
});
