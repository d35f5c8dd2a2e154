/**
 * SaslHandshake (key 17), versions 0–1 (never flexible: the version cannot be easily bumped,
 * KAFKA-9577). The client names a mechanism; the broker answers whether it is enabled and, either
 * way, which ones are. v0 and v1 share one grammar and differ in what follows:
 *
 *   SaslHandshakeRequest  := Mechanism STRING                      (e.g. SCRAM-SHA-512, PLAIN)
 *
 *   SaslHandshakeResponse := ErrorCode INT16                       (UNSUPPORTED_SASL_MECHANISM 33,
 *                                                                   ILLEGAL_SASL_STATE 34)
 *                            Mechanisms ARRAY of STRING            (the enabled mechanisms)
 *
 * After a v0 handshake the SASL tokens travel raw (INT32 length + token, no Kafka header); after
 * v1 they travel in SaslAuthenticate requests (sasl-authenticate.ts).
 */
import { array, field, type ApiSchema } from '../schema.js';

export interface SaslHandshakeRequest {
  readonly mechanism: string;
}

export interface SaslHandshakeResponse {
  readonly errorCode: number;
  readonly mechanisms: readonly string[];
}

export const SaslHandshakeApi: ApiSchema<SaslHandshakeRequest, SaslHandshakeResponse> = {
  apiKey: 17,
  name: 'SaslHandshake',
  minVersion: 0,
  maxVersion: 1,
  request: [field('Mechanism', 'string', '0+')],
  response: [field('ErrorCode', 'int16', '0+'), field('Mechanisms', array('string'), '0+')],
};
