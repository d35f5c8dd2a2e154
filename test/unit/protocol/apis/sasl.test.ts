/**
 * SaslHandshake (17) and SaslAuthenticate (36), v0–1: golden bytes laid out by hand from Kafka's
 * SaslHandshakeRequest/Response.json and SaslAuthenticateRequest/Response.json, round trips, the
 * v1-only session lifetime, and truncation.
 */
import { describe, expect, it } from 'vitest';
import {
  SaslAuthenticateApi,
  SaslHandshakeApi,
  type SaslAuthenticateRequest,
  type SaslAuthenticateResponse,
  type SaslHandshakeResponse,
} from '../../../../src/protocol/apis/index.js';
import { KafkaErrorCode } from '../../../../src/protocol/kafka-errors.js';
import { decodeRequest, decodeResponse, encodeRequest, encodeResponse, hex, roundTripRequest, roundTripResponse, thrownBy, truncationTests, versionsOf } from './helpers.js';

describe('SaslHandshake', () => {
  it('serves v0–1, neither flexible', () => {
    expect([SaslHandshakeApi.apiKey, SaslHandshakeApi.minVersion, SaslHandshakeApi.maxVersion, SaslHandshakeApi.flexibleVersions]).toEqual([17, 0, 1, undefined]);
  });

  for (const v of versionsOf(SaslHandshakeApi)) {
    it(`v${v}: the request is the mechanism name`, () => {
      const bytes = hex('000d 5343 5241 4d2d 5348 412d 3531 32 # "SCRAM-SHA-512"');
      expect(encodeRequest(SaslHandshakeApi, v, { mechanism: 'SCRAM-SHA-512' })).toEqual(bytes);
      expect(decodeRequest(SaslHandshakeApi, v, bytes)).toEqual({ mechanism: 'SCRAM-SHA-512' });
    });

    it(`v${v}: the response is an error code and the enabled mechanisms`, () => {
      const response: SaslHandshakeResponse = { errorCode: KafkaErrorCode.UNSUPPORTED_SASL_MECHANISM, mechanisms: ['SCRAM-SHA-512', 'PLAIN'] };
      const bytes = hex(`
        0021                                   # ErrorCode 33
        00000002                               # 2 mechanisms
        000d 5343 5241 4d2d 5348 412d 3531 32  # SCRAM-SHA-512
        0005 504c 4149 4e                      # PLAIN
      `);
      expect(encodeResponse(SaslHandshakeApi, v, response)).toEqual(bytes);
      expect(decodeResponse(SaslHandshakeApi, v, bytes)).toEqual(response);
    });
  }

  it('refuses a mechanism array whose count runs past the body', () => {
    expect(thrownBy(() => decodeResponse(SaslHandshakeApi, 1, hex('0000 7fffffff 0001 41')))).toBe('MalformedMessageError');
  });
});

describe('SaslAuthenticate', () => {
  const request: SaslAuthenticateRequest = { authBytes: Buffer.from('\u0000alice\u0000secret') };
  const response: SaslAuthenticateResponse = { errorCode: 0, errorMessage: null, authBytes: Buffer.from('v=abc'), sessionLifetimeMs: 0n };

  it('serves v0–1, neither flexible', () => {
    expect([SaslAuthenticateApi.apiKey, SaslAuthenticateApi.minVersion, SaslAuthenticateApi.maxVersion, SaslAuthenticateApi.flexibleVersions]).toEqual([36, 0, 1, undefined]);
  });

  it('carries the token as BYTES', () => {
    const bytes = hex('0000000d 00 616c696365 00 736563726574 # \\0alice\\0secret');
    for (const v of versionsOf(SaslAuthenticateApi)) {
      expect(encodeRequest(SaslAuthenticateApi, v, request)).toEqual(bytes);
      expect(decodeRequest(SaslAuthenticateApi, v, bytes)).toEqual(request);
    }
  });

  it('answers with code, message and token; v1 adds the session lifetime', () => {
    const failed: SaslAuthenticateResponse = { errorCode: KafkaErrorCode.SASL_AUTHENTICATION_FAILED, errorMessage: 'Authentication failed', authBytes: Buffer.alloc(0), sessionLifetimeMs: 0n };
    const v0 = hex(`
      003a                                     # ErrorCode 58
      0015 41757468656e7469636174696f6e206661696c6564  # "Authentication failed"
      00000000                                 # AuthBytes: empty
    `);
    expect(encodeResponse(SaslAuthenticateApi, 0, failed)).toEqual(v0);
    expect(encodeResponse(SaslAuthenticateApi, 1, failed)).toEqual(Buffer.concat([v0, hex('0000000000000000')]));
    expect(decodeResponse(SaslAuthenticateApi, 1, hex('0000 ffff 00000005 763d616263 0000000000000e10'))).toEqual({ ...response, sessionLifetimeMs: 3600n });
    expect(decodeResponse(SaslAuthenticateApi, 0, hex('0000 ffff 00000005 763d616263'))).toEqual(response);
  });

  it('writes an empty token when none is given (BYTES is not nullable)', () => {
    const partial = { errorCode: KafkaErrorCode.ILLEGAL_SASL_STATE, errorMessage: null } as unknown as SaslAuthenticateResponse;
    expect(encodeResponse(SaslAuthenticateApi, 1, partial)).toEqual(hex('0022 ffff 00000000 0000000000000000'));
  });

  it('refuses a null token in a request', () => {
    expect(thrownBy(() => decodeRequest(SaslAuthenticateApi, 1, hex('ffffffff')))).toBe('MalformedMessageError');
  });

  it('round-trips every version', () => {
    for (const v of versionsOf(SaslAuthenticateApi)) {
      expect(roundTripRequest(SaslAuthenticateApi, v, request)).toEqual(request);
      expect(roundTripResponse(SaslAuthenticateApi, v, { ...response, sessionLifetimeMs: 5n })).toEqual({ ...response, sessionLifetimeMs: v >= 1 ? 5n : 0n });
    }
  });
});

truncationTests(SaslHandshakeApi, { mechanism: 'PLAIN' }, { errorCode: 0, mechanisms: ['PLAIN'] });
truncationTests(SaslAuthenticateApi, { authBytes: Buffer.from('n,,n=u,r=x') }, { errorCode: 0, errorMessage: 'm', authBytes: Buffer.from('v=1'), sessionLifetimeMs: 0n });
