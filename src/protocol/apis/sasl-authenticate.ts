/**
 * SaslAuthenticate (key 36), versions 0–1 (non-flexible; v2 is flexible). Carries one SASL token
 * each way after a v1 SaslHandshake: PLAIN needs one round trip, SCRAM two.
 *
 *   SaslAuthenticateRequest  := AuthBytes BYTES                    (the client's token)
 *
 *   SaslAuthenticateResponse := ErrorCode INT16                    (SASL_AUTHENTICATION_FAILED 58,
 *                                                                   ILLEGAL_SASL_STATE 34)
 *                               ErrorMessage NULLABLE_STRING
 *                               AuthBytes BYTES                    (the server's token; empty when none)
 *                               SessionLifetimeMs INT64            (v1+; 0 = no re-authentication, KIP-368)
 */
import { field, type ApiSchema } from '../schema.js';

/** What an answer without a token carries (an error, or PLAIN's success): BYTES is not nullable. */
const NO_TOKEN = Buffer.alloc(0);

export interface SaslAuthenticateRequest {
  readonly authBytes: Buffer;
}

export interface SaslAuthenticateResponse {
  readonly errorCode: number;
  readonly errorMessage: string | null;
  readonly authBytes: Buffer;
  readonly sessionLifetimeMs: bigint;
}

export const SaslAuthenticateApi: ApiSchema<SaslAuthenticateRequest, SaslAuthenticateResponse> = {
  apiKey: 36,
  name: 'SaslAuthenticate',
  minVersion: 0,
  maxVersion: 1,
  request: [field('AuthBytes', 'bytes', '0+')],
  response: [
    field('ErrorCode', 'int16', '0+'),
    field('ErrorMessage', 'string', '0+', { nullable: '0+' }),
    field('AuthBytes', 'bytes', '0+', { default: NO_TOKEN }),
    field('SessionLifetimeMs', 'int64', '1+'),
  ],
};
