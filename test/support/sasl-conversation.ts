/**
 * The SASL exchange over a raw Conversation, step by step, for tests that need to see each answer
 * (or misbehave on purpose): handshake, authenticate, and whole PLAIN / SCRAM logins with the
 * project's own client-side mechanism code.
 */
import { ApiVersionsApi } from '../../src/protocol/apis/api-versions.js';
import type { MetadataRequest } from '../../src/protocol/apis/metadata.js';
import { SaslAuthenticateApi, type SaslAuthenticateResponse } from '../../src/protocol/apis/sasl-authenticate.js';
import { SaslHandshakeApi, type SaslHandshakeResponse } from '../../src/protocol/apis/sasl-handshake.js';
import { encodePlainToken } from '../../src/protocol/sasl/plain.js';
import { ScramClientExchange, type ScramMechanism } from '../../src/protocol/sasl/scram.js';
import type { Conversation } from './conversation.js';

/** A Metadata request for every topic, creating none. */
export const METADATA_ALL: MetadataRequest = { topics: null, allowAutoTopicCreation: false, includeClusterAuthorizedOperations: false, includeTopicAuthorizedOperations: false };

export function handshake(conversation: Conversation, mechanism: string, version = 1): Promise<SaslHandshakeResponse> {
  return conversation.request(SaslHandshakeApi, version, { mechanism });
}

export function authenticate(conversation: Conversation, authBytes: Buffer, version = 1): Promise<SaslAuthenticateResponse> {
  return conversation.request(SaslAuthenticateApi, version, { authBytes });
}

export async function apiVersions(conversation: Conversation): Promise<number> {
  return (await conversation.request(ApiVersionsApi, 2, {})).errorCode;
}

/** Handshake + PLAIN token; the SaslAuthenticate answer. */
export async function plainLogin(conversation: Conversation, username: string, password: string): Promise<SaslAuthenticateResponse> {
  const shake = await handshake(conversation, 'PLAIN');
  if (shake.errorCode !== 0) throw new Error(`PLAIN handshake refused with ${shake.errorCode}`);
  return authenticate(conversation, encodePlainToken(username, password));
}

/** Handshake + both SCRAM round trips; the last SaslAuthenticate answer (an error stops early). */
export async function scramLogin(conversation: Conversation, mechanism: ScramMechanism, username: string, password: string): Promise<SaslAuthenticateResponse> {
  const shake = await handshake(conversation, mechanism);
  if (shake.errorCode !== 0) throw new Error(`${mechanism} handshake refused with ${shake.errorCode}`);
  const client = new ScramClientExchange(mechanism, username, password);
  const first = await authenticate(conversation, client.clientFirst());
  if (first.errorCode !== 0) return first;
  const final = await authenticate(conversation, client.receiveServerFirst(first.authBytes));
  if (final.errorCode === 0) client.receiveServerFinal(final.authBytes);
  return final;
}
