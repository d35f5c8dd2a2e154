/**
 * What a secured broker refuses (issue #21 acceptance), on one broker with PLAINTEXT,
 * SASL_PLAINTEXT, SASL_SSL and SSL (client certificate required) listeners: each refusal is
 * answered with Kafka's code or a closed connection, and nothing is served to the client —
 * a Metadata request sent afterwards on the same connection gets no answer.
 *
 * - wrong password and unknown user: SASL_AUTHENTICATION_FAILED (58), the same message for both,
 *   then the connection closes (SCRAM-SHA-512 and PLAIN, through our raw exchange and kafkajs);
 * - an unknown mechanism: UNSUPPORTED_SASL_MECHANISM (33) with the enabled list; PLAIN on the
 *   SASL_PLAINTEXT listener likewise (it is not offered without TLS);
 * - a request before authentication: the connection closes unanswered; SaslAuthenticate before the
 *   handshake: ILLEGAL_SASL_STATE (34), then closed; after authentication, a second handshake is
 *   ILLEGAL_SASL_STATE and the connection stays usable;
 * - a frame larger than sasl.server.max.receive.size before authentication: closed;
 * - a plaintext client on a TLS port, and a TLS client without a certificate on the SSL listener:
 *   no Kafka answer, closed;
 * - the failures are counted per listener and mechanism, and the broker still serves a client
 *   that authenticates properly.
 */
import { Kafka, logLevel } from 'kafkajs';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { METRIC_PREFIX, metricsRegistry } from '../../../src/common/metrics.js';
import { MetadataApi } from '../../../src/protocol/apis/metadata.js';
import { KafkaErrorCode } from '../../../src/protocol/kafka-errors.js';
import { encodePlainToken } from '../../../src/protocol/sasl/plain.js';
import { Conversation, requestFrame } from '../../support/conversation.js';
import { METADATA_ALL, apiVersions, authenticate, handshake, plainLogin, scramLogin } from '../../support/sasl-conversation.js';
import { startSecureBroker, type SecureBroker } from '../../support/secure-broker.js';

const USER = 'bob';
const PASSWORD = 'bob-password-1';

let secure: SecureBroker;
const open: Conversation[] = [];

beforeAll(async () => {
  secure = await startSecureBroker({ users: { [USER]: PASSWORD } });
});
afterAll(async () => {
  for (const conversation of open) conversation.close();
  await secure?.stop();
  expect(secure?.logLines.filter((line) => Number(line['level']) >= 50) ?? []).toEqual([]);
});

const port = (address: string): number => Number(address.slice(address.lastIndexOf(':') + 1));

async function saslSsl(): Promise<Conversation> {
  const conversation = await Conversation.openTls(port(secure.saslSsl), { ca: readFileSync(secure.certificates.ca), servername: 'localhost' });
  open.push(conversation);
  return conversation;
}

async function saslPlaintext(): Promise<Conversation> {
  const conversation = await Conversation.open(port(secure.saslPlaintext));
  open.push(conversation);
  return conversation;
}

/** A Metadata request on `conversation` is not answered: the broker closed it. */
async function servesNothing(conversation: Conversation): Promise<void> {
  if (!conversation.closed) conversation.send(requestFrame(MetadataApi, 1, conversation.nextCorrelationId(), METADATA_ALL));
  expect(await conversation.closedWithin(10_000)).toBe(true);
  await expect(conversation.response(100)).rejects.toThrow(/closed/);
}

async function failures(listener: string, mechanism: string): Promise<number> {
  const metric = metricsRegistry().getSingleMetric(`${METRIC_PREFIX}broker_authentication_failures_total`);
  const values = metric === undefined ? [] : (await metric.get()).values;
  return values.filter((entry) => entry.labels['listener'] === listener && entry.labels['mechanism'] === mechanism).reduce((sum, entry) => sum + entry.value, 0);
}

describe('credentials', () => {
  it('a wrong SCRAM-SHA-512 password is SASL_AUTHENTICATION_FAILED, then the connection closes', async () => {
    const before = await failures('SASL_SSL', 'SCRAM-SHA-512');
    const conversation = await saslSsl();
    expect(await apiVersions(conversation)).toBe(0);
    const answer = await scramLogin(conversation, 'SCRAM-SHA-512', USER, 'not-the-password');
    expect(answer.errorCode).toBe(KafkaErrorCode.SASL_AUTHENTICATION_FAILED);
    expect(answer.errorMessage).toContain('invalid credentials');
    await servesNothing(conversation);
    expect(await failures('SASL_SSL', 'SCRAM-SHA-512')).toBe(before + 1);
  });

  it('an unknown user fails the same way, at the same step (no telling users apart)', async () => {
    const wrongPassword = await scramLogin(await saslSsl(), 'SCRAM-SHA-512', USER, 'nope');
    const conversation = await saslSsl();
    const unknown = await scramLogin(conversation, 'SCRAM-SHA-512', 'mallory', 'nope');
    expect(unknown.errorCode).toBe(KafkaErrorCode.SASL_AUTHENTICATION_FAILED);
    expect(unknown.errorMessage).toBe(wrongPassword.errorMessage);
    await servesNothing(conversation);
  });

  it('PLAIN with a wrong password or an unknown user is SASL_AUTHENTICATION_FAILED with one message', async () => {
    const wrong = await saslSsl();
    const wrongAnswer = await plainLogin(wrong, USER, 'nope');
    const unknown = await saslSsl();
    const unknownAnswer = await plainLogin(unknown, 'mallory', 'nope');
    expect([wrongAnswer.errorCode, unknownAnswer.errorCode]).toEqual([KafkaErrorCode.SASL_AUTHENTICATION_FAILED, KafkaErrorCode.SASL_AUTHENTICATION_FAILED]);
    expect(unknownAnswer.errorMessage).toBe(wrongAnswer.errorMessage);
    await servesNothing(wrong);
    await servesNothing(unknown);
  });

  it('kafkajs with a wrong password fails to connect with an authentication error', async () => {
    const kafka = new Kafka({
      brokers: [secure.saslSsl],
      logLevel: logLevel.NOTHING,
      retry: { retries: 0 },
      ssl: { ca: [readFileSync(secure.certificates.ca)] },
      sasl: { mechanism: 'scram-sha-512', username: USER, password: 'wrong' },
    });
    const admin = kafka.admin();
    await expect(admin.connect()).rejects.toThrow(/SASL SCRAM SHA512 authentication failed/i);
    await admin.disconnect();
  });
});

describe('mechanisms', () => {
  it('an unknown mechanism is UNSUPPORTED_SASL_MECHANISM with the enabled list, then closed', async () => {
    const conversation = await saslSsl();
    const answer = await handshake(conversation, 'GSSAPI');
    expect(answer).toEqual({ errorCode: KafkaErrorCode.UNSUPPORTED_SASL_MECHANISM, mechanisms: ['SCRAM-SHA-512', 'SCRAM-SHA-256', 'PLAIN'] });
    await servesNothing(conversation);
  });

  it('PLAIN is not offered on the SASL_PLAINTEXT listener (the password would travel in clear)', async () => {
    const conversation = await saslPlaintext();
    const answer = await handshake(conversation, 'PLAIN');
    expect(answer).toEqual({ errorCode: KafkaErrorCode.UNSUPPORTED_SASL_MECHANISM, mechanisms: ['SCRAM-SHA-512', 'SCRAM-SHA-256'] });
    await servesNothing(conversation);
    // SCRAM works there.
    const scram = await saslPlaintext();
    expect((await scramLogin(scram, 'SCRAM-SHA-256', USER, PASSWORD)).errorCode).toBe(0);
    expect((await scram.request(MetadataApi, 1, METADATA_ALL)).brokers.map((broker) => broker.port)).toEqual([port(secure.saslPlaintext)]);
  });
});

describe('sequence', () => {
  it('a request before authentication closes the connection unanswered', async () => {
    const conversation = await saslSsl();
    await servesNothing(conversation);
  });

  it('a request after the handshake but before the exchange ends closes the connection unanswered', async () => {
    const conversation = await saslPlaintext();
    expect((await handshake(conversation, 'SCRAM-SHA-512')).errorCode).toBe(0);
    await servesNothing(conversation);
  });

  it('SaslAuthenticate before a handshake is ILLEGAL_SASL_STATE, then closed', async () => {
    const conversation = await saslSsl();
    const answer = await authenticate(conversation, encodePlainToken(USER, PASSWORD));
    expect(answer.errorCode).toBe(KafkaErrorCode.ILLEGAL_SASL_STATE);
    await servesNothing(conversation);
  });

  it('after authentication a second handshake is ILLEGAL_SASL_STATE and requests are still served', async () => {
    const conversation = await saslSsl();
    expect((await scramLogin(conversation, 'SCRAM-SHA-512', USER, PASSWORD)).errorCode).toBe(0);
    expect((await handshake(conversation, 'PLAIN')).errorCode).toBe(KafkaErrorCode.ILLEGAL_SASL_STATE);
    expect((await authenticate(conversation, Buffer.from('x'))).errorCode).toBe(KafkaErrorCode.ILLEGAL_SASL_STATE);
    expect((await conversation.request(MetadataApi, 1, METADATA_ALL)).brokers.map((broker) => broker.port)).toEqual([port(secure.saslSsl)]);
  });

  it('a frame above sasl.server.max.receive.size before authentication closes the connection', async () => {
    const conversation = await saslPlaintext();
    const prefix = Buffer.alloc(4);
    prefix.writeInt32BE(524_288 + 1);
    conversation.send(prefix);
    expect(await conversation.closedWithin(10_000)).toBe(true);
  });
});

describe('TLS', () => {
  it('a plaintext Kafka client on a TLS port gets no Kafka answer and is disconnected', async () => {
    for (const address of [secure.saslSsl, secure.ssl]) {
      const conversation = await Conversation.open(port(address));
      open.push(conversation);
      await servesNothing(conversation);
    }
  });

  it('the SSL listener refuses a client without a certificate', async () => {
    // TLS 1.3: the client may finish its side before the server checks for a certificate; either
    // the handshake fails or the connection closes before any answer.
    const attempt = Conversation.openTls(port(secure.ssl), { ca: readFileSync(secure.certificates.ca), servername: 'localhost' });
    const outcome = await attempt.then(
      async (conversation) => {
        open.push(conversation);
        await servesNothing(conversation);
        return 'closed';
      },
      () => 'handshake failed',
    );
    expect(['closed', 'handshake failed']).toContain(outcome);
    expect(await failures('SSL', 'SSL')).toBeGreaterThan(0);
  });

  it('a client certificate signed by the CA is let in on the SSL listener', async () => {
    const pem = readFileSync(secure.certificates.client);
    const conversation = await Conversation.openTls(port(secure.ssl), { ca: readFileSync(secure.certificates.ca), servername: 'localhost', key: pem, cert: pem });
    open.push(conversation);
    expect((await conversation.request(MetadataApi, 1, METADATA_ALL)).brokers.map((broker) => broker.port)).toEqual([port(secure.ssl)]);
  });
});
