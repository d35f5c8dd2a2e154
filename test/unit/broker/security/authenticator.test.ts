/**
 * The SASL state machine of one connection (authenticator.ts), frame by frame, with credentials
 * made the way `tributary users add` makes them: what is answered, when the connection is to be
 * closed, and who the client is once it has authenticated.
 */
import { describe, expect, it } from 'vitest';
import { SaslAuthenticator, type AuthenticationStep } from '../../../../src/broker/security/authenticator.js';
import type { CredentialSource } from '../../../../src/broker/security/sasl-mechanisms.js';
import { createLogger } from '../../../../src/common/logger.js';
import { ApiVersionsApi } from '../../../../src/protocol/apis/api-versions.js';
import { MetadataApi } from '../../../../src/protocol/apis/metadata.js';
import { SaslAuthenticateApi, type SaslAuthenticateResponse } from '../../../../src/protocol/apis/sasl-authenticate.js';
import { SaslHandshakeApi, type SaslHandshakeResponse } from '../../../../src/protocol/apis/sasl-handshake.js';
import { KafkaErrorCode } from '../../../../src/protocol/kafka-errors.js';
import { encodePlainToken } from '../../../../src/protocol/sasl/plain.js';
import { ScramClientExchange, scramCredential, type ScramCredential, type ScramMechanism } from '../../../../src/protocol/sasl/scram.js';
import { decodeResponse, requestFrame } from '../../../support/conversation.js';
import { METADATA_ALL } from '../../../support/sasl-conversation.js';
import type { ApiSchema } from '../../../../src/protocol/schema.js';

const stored = new Map<string, ScramCredential>([
  ['SCRAM-SHA-512:ann', scramCredential('SCRAM-SHA-512', 'ann-pw')],
  ['SCRAM-SHA-256:ann', scramCredential('SCRAM-SHA-256', 'ann-pw')],
]);
const credentials: CredentialSource = { credential: (user, mechanism: ScramMechanism) => stored.get(`${mechanism}:${user}`) };
const failures: string[] = [];
const successes: string[] = [];

function authenticator(): SaslAuthenticator {
  return new SaslAuthenticator(
    {
      listenerName: 'SASL_SSL',
      mechanisms: ['SCRAM-SHA-512', 'SCRAM-SHA-256', 'PLAIN'],
      credentials,
      failedAuthenticationDelayMs: 0,
      metrics: { succeeded: (_listener, mechanism) => successes.push(mechanism), failed: (_listener, mechanism) => failures.push(mechanism) },
      logger: createLogger({ name: 'authenticator-test', level: 'silent' }),
    },
    '127.0.0.1:5000',
  );
}

let correlation = 0;
/** `step` on a request frame; its decoded answer when it responded. */
async function ask<Req, Res>(auth: SaslAuthenticator, api: ApiSchema<Req, Res>, version: number, request: Req): Promise<{ step: AuthenticationStep; answer?: Res }> {
  correlation += 1;
  const frame = requestFrame(api, version, correlation, request);
  const step = await auth.step(frame.subarray(4));
  if (step.kind !== 'respond') return { step };
  const body = Buffer.concat(step.parts as Buffer[]);
  const prefix = Buffer.alloc(4);
  prefix.writeInt32BE(body.length);
  return { step, answer: decodeResponse(api, version, Buffer.concat([prefix, body]), correlation) };
}

const shake = (auth: SaslAuthenticator, mechanism: string, version = 1) => ask<{ mechanism: string }, SaslHandshakeResponse>(auth, SaslHandshakeApi, version, { mechanism });
const token = (auth: SaslAuthenticator, authBytes: Buffer) => ask<{ authBytes: Buffer }, SaslAuthenticateResponse>(auth, SaslAuthenticateApi, 1, { authBytes });

describe('SaslAuthenticator', () => {
  it('ApiVersions → SCRAM-SHA-512 handshake → two tokens: authenticated as User:ann, session without expiry', async () => {
    const auth = authenticator();
    expect((await auth.step(requestFrame(ApiVersionsApi, 2, 1, {}).subarray(4))).kind).toBe('route');
    expect((await shake(auth, 'SCRAM-SHA-512')).answer).toEqual({ errorCode: 0, mechanisms: ['SCRAM-SHA-512', 'SCRAM-SHA-256', 'PLAIN'] });
    const client = new ScramClientExchange('SCRAM-SHA-512', 'ann', 'ann-pw');
    const first = await token(auth, client.clientFirst());
    expect(first.answer?.errorCode).toBe(0);
    expect(auth.authenticatedPrincipal).toBeUndefined();
    const final = await token(auth, client.receiveServerFirst(first.answer?.authBytes ?? Buffer.alloc(0)));
    expect(final.answer).toMatchObject({ errorCode: 0, sessionLifetimeMs: 0n });
    client.receiveServerFinal(final.answer?.authBytes ?? Buffer.alloc(0));
    expect(auth.authenticatedPrincipal).toBe('User:ann');
    expect(successes).toContain('SCRAM-SHA-512');
  });

  it('PLAIN checks the password against the stored SCRAM keys', async () => {
    const good = authenticator();
    await shake(good, 'PLAIN');
    expect((await token(good, encodePlainToken('ann', 'ann-pw'))).answer?.errorCode).toBe(0);
    expect(good.authenticatedPrincipal).toBe('User:ann');

    const bad = authenticator();
    await shake(bad, 'PLAIN');
    const refused = await token(bad, encodePlainToken('ann', 'wrong'));
    expect(refused.answer?.errorCode).toBe(KafkaErrorCode.SASL_AUTHENTICATION_FAILED);
    expect(refused.step.kind === 'respond' ? refused.step.closeAfter : undefined).toContain('failed authentication');
    expect(bad.authenticatedPrincipal).toBeUndefined();
    expect(failures).toContain('PLAIN');
  });

  it('a v0 handshake switches to raw tokens', async () => {
    const auth = authenticator();
    await shake(auth, 'PLAIN', 0);
    expect(auth.expectsRawToken).toBe(true);
    const step = await auth.step(encodePlainToken('ann', 'ann-pw'));
    expect(step).toEqual({ kind: 'respond', parts: [Buffer.alloc(0)], apiKey: SaslAuthenticateApi.apiKey });
    expect(auth.authenticatedPrincipal).toBe('User:ann');

    const wrong = authenticator();
    await shake(wrong, 'PLAIN', 0);
    expect((await wrong.step(encodePlainToken('ann', 'no'))).kind).toBe('close');
  });

  it('refuses what is out of place', async () => {
    expect((await ask(authenticator(), MetadataApi, 1, METADATA_ALL)).step.kind).toBe('close');
    const unknown = await shake(authenticator(), 'GSSAPI');
    expect(unknown.answer?.errorCode).toBe(KafkaErrorCode.UNSUPPORTED_SASL_MECHANISM);
    expect(unknown.step.kind === 'respond' ? unknown.step.closeAfter : undefined).toBeTypeOf('string');
    expect(failures).toContain('unsupported');
    const early = await token(authenticator(), Buffer.from('x'));
    expect(early.answer?.errorCode).toBe(KafkaErrorCode.ILLEGAL_SASL_STATE);
    const twice = authenticator();
    await shake(twice, 'SCRAM-SHA-256');
    expect((await shake(twice, 'SCRAM-SHA-256')).answer?.errorCode).toBe(KafkaErrorCode.ILLEGAL_SASL_STATE);
    const late = authenticator();
    await shake(late, 'SCRAM-SHA-256');
    expect((await late.step(requestFrame(ApiVersionsApi, 2, 1, {}).subarray(4))).kind).toBe('close');
    expect((await authenticator().step(Buffer.from([0, 1]))).kind).toBe('close');
  });
});
