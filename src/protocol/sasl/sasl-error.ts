/**
 * The failure of a SASL exchange, with the Kafka code the broker answers it with:
 * SASL_AUTHENTICATION_FAILED (58) for anything the client got wrong (bad token, wrong password,
 * unknown user), ILLEGAL_SASL_STATE (34) for a message out of sequence. Both end the connection.
 *
 * Messages never hold a password, a proof or a token; they may be sent to the client and logged.
 */
import { KafkaProtocolError } from '../kafka-errors.js';

export type SaslErrorName = 'SASL_AUTHENTICATION_FAILED' | 'ILLEGAL_SASL_STATE';

export class SaslError extends KafkaProtocolError {
  constructor(name: SaslErrorName, message: string, options: { cause?: unknown } = {}) {
    super(name, message, options);
    this.name = 'SaslError';
  }
}

/** SASL_AUTHENTICATION_FAILED with `reason`. */
export function authenticationFailed(reason: string): SaslError {
  return new SaslError('SASL_AUTHENTICATION_FAILED', `Authentication failed: ${reason}`);
}

/** ILLEGAL_SASL_STATE: `what` arrived when the exchange expected something else. */
export function illegalState(what: string): SaslError {
  return new SaslError('ILLEGAL_SASL_STATE', `Unexpected SASL message: ${what}`);
}

/** Decodes UTF-8 strictly: a token that is not valid UTF-8 is refused rather than mangled. */
const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

export function decodeUtf8(bytes: Buffer, what: string): string {
  try {
    return UTF8.decode(bytes);
  } catch {
    throw authenticationFailed(`${what} is not valid UTF-8`);
  }
}
