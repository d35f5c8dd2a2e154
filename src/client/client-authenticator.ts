/**
 * The client side of SASL on a fresh connection, before anyone else may use it (kafka-clients.md
 * §4.1): ApiVersions (is SaslHandshake v1 there?), SaslHandshake v1 naming the mechanism, then the
 * mechanism's tokens in SaslAuthenticate v1 requests:
 *
 *   PLAIN          one token `\0 user \0 password`                       (RFC 4616)
 *   SCRAM-SHA-*    client-first ▸ server-first, client-final ▸ server-final (RFC 5802/7677); the
 *                  server's signature is checked, so a server that does not know the password
 *                  cannot pretend to have authenticated us.
 *
 * Every failure here is final (retriable false): the broker said no, or does not speak SASL the
 * way we need, and asking again changes neither. The broker's own message is kept.
 */
import { TributaryError } from '../common/errors.js';
import { ApiVersionsApi } from '../protocol/apis/api-versions.js';
import { SaslAuthenticateApi } from '../protocol/apis/sasl-authenticate.js';
import { SaslHandshakeApi } from '../protocol/apis/sasl-handshake.js';
import { kafkaErrorName } from '../protocol/kafka-errors.js';
import { encodePlainToken } from '../protocol/sasl/plain.js';
import { ScramClientExchange } from '../protocol/sasl/scram.js';
import type { KafkaConnection } from './connection.js';
import type { ClientSasl } from './security-config.js';

const API_VERSIONS_VERSION = 1;
const SASL_HANDSHAKE_VERSION = 1;
const SASL_AUTHENTICATE_VERSION = 1;
/** Kafka's codes (Errors.java); named here so this file reads without the table. */
const UNSUPPORTED_SASL_MECHANISM = 33;
const ILLEGAL_SASL_STATE = 34;
const SASL_AUTHENTICATION_FAILED = 58;

/** Authenticates `connection` as `sasl.username`; resolves once the broker accepted, throws otherwise. */
export async function authenticate(connection: KafkaConnection, sasl: ClientSasl): Promise<void> {
  const where = `broker ${connection.address}`;
  const versions = await connection.request(ApiVersionsApi, API_VERSIONS_VERSION, {});
  const handshake = versions.apiKeys.find((range) => range.apiKey === SaslHandshakeApi.apiKey);
  const authenticateRange = versions.apiKeys.find((range) => range.apiKey === SaslAuthenticateApi.apiKey);
  if (handshake === undefined || handshake.maxVersion < SASL_HANDSHAKE_VERSION || authenticateRange === undefined || authenticateRange.maxVersion < SASL_AUTHENTICATE_VERSION) {
    throw refused(
      'SASL_NOT_ENABLED',
      `${where} does not offer SaslHandshake v1 and SaslAuthenticate v1: the port is not a SASL listener (security.protocol PLAINTEXT or SSL there?)`,
      sasl,
    );
  }
  const answer = await connection.request(SaslHandshakeApi, SASL_HANDSHAKE_VERSION, { mechanism: sasl.mechanism });
  if (answer.errorCode === UNSUPPORTED_SASL_MECHANISM) {
    throw refused('UNSUPPORTED_SASL_MECHANISM', `${where} does not enable SASL ${sasl.mechanism}; it enables ${answer.mechanisms.join(', ') || 'none'}: set sasl.mechanism to one of them`, sasl);
  }
  if (answer.errorCode !== 0) throw refused(kafkaErrorName(answer.errorCode), `${where} refused the SASL handshake with ${kafkaErrorName(answer.errorCode)}`, sasl);

  if (sasl.mechanism === 'PLAIN') {
    await exchange(connection, encodePlainToken(sasl.username, sasl.password), sasl);
    return;
  }
  const scram = new ScramClientExchange(sasl.mechanism, sasl.username, sasl.password);
  const serverFirst = await exchange(connection, scram.clientFirst(), sasl);
  let clientFinal: Buffer;
  try {
    clientFinal = scram.receiveServerFirst(serverFirst);
  } catch (error) {
    throw refused('SASL_AUTHENTICATION_FAILED', `${where} sent a SCRAM server-first message we do not accept: ${(error as Error).message}`, sasl, error);
  }
  const serverFinal = await exchange(connection, clientFinal, sasl);
  try {
    scram.receiveServerFinal(serverFinal);
  } catch (error) {
    // The broker accepted our proof but could not prove it knows the user's keys: not the broker we meant to reach.
    throw refused('SASL_AUTHENTICATION_FAILED', `${where} failed to prove it holds this user's SCRAM keys: ${(error as Error).message}`, sasl, error);
  }
}

/** One SaslAuthenticate round trip; the broker's answer token. */
async function exchange(connection: KafkaConnection, token: Buffer, sasl: ClientSasl): Promise<Buffer> {
  const answer = await connection.request(SaslAuthenticateApi, SASL_AUTHENTICATE_VERSION, { authBytes: token });
  if (answer.errorCode === 0) return answer.authBytes;
  const name = answer.errorCode === SASL_AUTHENTICATION_FAILED ? 'SASL_AUTHENTICATION_FAILED' : answer.errorCode === ILLEGAL_SASL_STATE ? 'ILLEGAL_SASL_STATE' : kafkaErrorName(answer.errorCode);
  const said = answer.errorMessage === null || answer.errorMessage === '' ? name : answer.errorMessage;
  throw refused(
    name,
    `broker ${connection.address} refused SASL ${sasl.mechanism} authentication of user "${sasl.username}": ${said}` +
      (answer.errorCode === SASL_AUTHENTICATION_FAILED ? '; check sasl.username and the password (sasl.password.file), and that the user exists (tributary users list)' : ''),
    sasl,
  );
}

function refused(code: string, message: string, sasl: ClientSasl, cause?: unknown): TributaryError {
  return new TributaryError({ code, message, retriable: false, cause, details: { mechanism: sasl.mechanism, username: sasl.username } });
}
