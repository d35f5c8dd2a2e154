/** SASL PLAIN tokens (RFC 4616) as Kafka's PlainSaslServer takes them. */
import { describe, expect, it } from 'vitest';
import { decodePlainToken, encodePlainToken, MAX_PLAIN_FIELD_BYTES, SaslError } from '../../../../src/protocol/sasl/plain.js';

function refusal(token: Buffer): string {
  try {
    decodePlainToken(token);
  } catch (error) {
    if (error instanceof SaslError) return `${error.kafkaCode} ${error.message}`;
    throw error;
  }
  return 'accepted';
}

describe('decodePlainToken', () => {
  it('reads authzid NUL username NUL password', () => {
    expect(decodePlainToken(Buffer.from('\u0000alice\u0000s3cret'))).toEqual({ authorizationId: '', username: 'alice', password: 's3cret' });
    expect(decodePlainToken(Buffer.from('alice\u0000alice\u0000pä$$ wörd'))).toEqual({ authorizationId: 'alice', username: 'alice', password: 'pä$$ wörd' });
  });

  it('refuses an authorization id other than the username (no acting as someone else)', () => {
    expect(refusal(Buffer.from('admin\u0000alice\u0000s3cret'))).toBe('58 Authentication failed: the authorization id differs from the username');
  });

  it.each([
    ['no NUL', 'alice'],
    ['one NUL', 'alice\u0000s3cret'],
    ['three NULs', '\u0000alice\u0000s3cret\u0000'],
    ['empty username', '\u0000\u0000s3cret'],
    ['empty password', '\u0000alice\u0000'],
    ['empty token', ''],
  ])('refuses a token with %s (SASL_AUTHENTICATION_FAILED)', (_, token) => {
    expect(refusal(Buffer.from(token))).toMatch(/^58 Authentication failed: /);
  });

  it('refuses invalid UTF-8 and over-long fields without echoing them', () => {
    expect(refusal(Buffer.from([0, 0x61, 0, 0xff, 0xfe]))).toBe('58 Authentication failed: PLAIN token is not valid UTF-8');
    const long = 'p'.repeat(MAX_PLAIN_FIELD_BYTES + 1);
    expect(refusal(Buffer.from(`\u0000alice\u0000${long}`))).toBe('58 Authentication failed: a PLAIN token field is too long');
    expect(refusal(Buffer.from(`\u0000alice\u0000${'p'.repeat(5000)}`))).toBe('58 Authentication failed: PLAIN token is too long');
    expect(decodePlainToken(Buffer.from(`\u0000alice\u0000${'p'.repeat(MAX_PLAIN_FIELD_BYTES)}`)).password).toHaveLength(MAX_PLAIN_FIELD_BYTES);
  });

  it('answers every prefix of a token with a result or a SaslError, nothing else', () => {
    const token = Buffer.from('alice\u0000alice\u0000s3cret');
    const outcomes = new Set<string>();
    for (let length = 0; length <= token.length; length += 1) outcomes.add(refusal(token.subarray(0, length)).split(':')[0] ?? '');
    expect([...outcomes].sort()).toEqual(['58 Authentication failed', 'accepted']);
  });
});

describe('encodePlainToken', () => {
  it('writes NUL username NUL password, which decodes back', () => {
    const token = encodePlainToken('alice', 'pä$$');
    expect(token).toEqual(Buffer.from('\u0000alice\u0000pä$$', 'utf8'));
    expect(decodePlainToken(token)).toEqual({ authorizationId: '', username: 'alice', password: 'pä$$' });
  });

  it('refuses what could not be read back', () => {
    expect(() => encodePlainToken('', 'x')).toThrow(TypeError);
    expect(() => encodePlainToken('a\u0000b', 'x')).toThrow(TypeError);
    expect(() => encodePlainToken('alice', 'x\u0000y')).toThrow(TypeError);
  });
});
