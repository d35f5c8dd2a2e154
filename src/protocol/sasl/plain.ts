/**
 * SASL PLAIN (RFC 4616): one token from the client, nothing back.
 *
 *   message = [authzid] NUL authcid NUL passwd           (each UTF-8, without NUL)
 *
 * As Kafka's PlainSaslServer: the username (authcid) and password must be non-empty, and an
 * authorization id, when given, must equal the username (no acting as another user). Each part is
 * bounded (RFC 4616 asks servers to take up to 255 octets; we take up to MAX_PLAIN_FIELD_BYTES),
 * so a token never costs more than a few KiB to look at. The password is checked elsewhere
 * (scram.ts verifyPassword: against the stored SCRAM keys, as no password is stored).
 */
import { authenticationFailed, decodeUtf8 } from './sasl-error.js';

export { SaslError } from './sasl-error.js';

export const MAX_PLAIN_FIELD_BYTES = 1024;

export interface PlainToken {
  readonly authorizationId: string;
  readonly username: string;
  readonly password: string;
}

/** Splits and checks a PLAIN token; throws SaslError (SASL_AUTHENTICATION_FAILED) when malformed. */
export function decodePlainToken(token: Buffer): PlainToken {
  if (token.length > 3 * MAX_PLAIN_FIELD_BYTES + 2) throw authenticationFailed('PLAIN token is too long');
  const first = token.indexOf(0);
  const second = first < 0 ? -1 : token.indexOf(0, first + 1);
  if (first < 0 || second < 0 || token.indexOf(0, second + 1) >= 0) {
    throw authenticationFailed('PLAIN token must be authzid NUL username NUL password');
  }
  const parts = [token.subarray(0, first), token.subarray(first + 1, second), token.subarray(second + 1)];
  if (parts.some((part) => part.length > MAX_PLAIN_FIELD_BYTES)) throw authenticationFailed('a PLAIN token field is too long');
  const [authorizationId, username, password] = parts.map((part) => decodeUtf8(part, 'PLAIN token')) as [string, string, string];
  if (username === '') throw authenticationFailed('PLAIN username is empty');
  if (password === '') throw authenticationFailed('PLAIN password is empty');
  if (authorizationId !== '' && authorizationId !== username) {
    throw authenticationFailed('the authorization id differs from the username');
  }
  return { authorizationId, username, password };
}

/** The token a client sends: no authorization id (it would have to equal the username anyway). */
export function encodePlainToken(username: string, password: string): Buffer {
  if (username === '' || username.includes('\u0000') || password.includes('\u0000')) {
    throw new TypeError('a PLAIN username must be non-empty, and neither it nor the password may contain NUL');
  }
  return Buffer.from(`\u0000${username}\u0000${password}`, 'utf8');
}
