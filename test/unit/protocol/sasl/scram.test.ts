/**
 * SCRAM-SHA-256/512 (RFC 5802, RFC 7677): the RFC 7677 test vector byte for byte, round trips of
 * our client and server, kafkajs's SCRAM client (an independent implementation) against our
 * server, and every way a client can get it wrong: proof, nonce, channel binding, extensions,
 * escaping, iterations, order, truncated and random messages.
 */
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import {
  MAX_SCRAM_ITERATIONS,
  MIN_SCRAM_ITERATIONS,
  SaslError,
  ScramClientExchange,
  ScramServerExchange,
  scramCredential,
  verifyPassword,
  verifyPasswordAsync,
  type ScramCredential,
  type ScramMechanism,
} from '../../../../src/protocol/sasl/scram.js';

const text = (value: string): Buffer => Buffer.from(value, 'utf8');

/** `code message` of the SaslError `action` throws; anything else thrown fails the test. */
function refusal(action: () => unknown): string {
  try {
    action();
  } catch (error) {
    if (error instanceof SaslError) return `${error.kafkaCode} ${error.message}`;
    throw error;
  }
  return 'accepted';
}

/** A whole exchange between our client and server; returns what the server learned. */
function exchange(mechanism: ScramMechanism, credential: ScramCredential | undefined, username: string, password: string): string {
  const client = new ScramClientExchange(mechanism, username, password);
  const server = new ScramServerExchange(mechanism);
  const { username: heard } = server.receiveClientFirst(client.clientFirst());
  client.receiveServerFinal(server.receiveClientFinal(client.receiveServerFirst(server.serverFirst(credential))));
  expect(server.complete).toBe(true);
  return heard;
}

describe('RFC 7677 §3 test vector (SCRAM-SHA-256, user "user", password "pencil")', () => {
  const clientFirst = 'n,,n=user,r=rOprNGfwEbeRWgbNEkqO';
  const serverFirst = 'r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096';
  const clientFinal = 'c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=';
  const serverFinal = 'v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=';
  const credential = scramCredential('SCRAM-SHA-256', 'pencil', { salt: Buffer.from('W22ZaJ0SNY7soEsUEjb6gQ==', 'base64'), iterations: 4096 });

  it('the server answers the published client messages with the published server messages', () => {
    const server = new ScramServerExchange('SCRAM-SHA-256', { nonce: '%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0' });
    expect(server.receiveClientFirst(text(clientFirst))).toEqual({ username: 'user' });
    expect(server.serverFirst(credential).toString()).toBe(serverFirst);
    expect(server.receiveClientFinal(text(clientFinal)).toString()).toBe(serverFinal);
    expect([server.complete, server.username]).toEqual([true, 'user']);
  });

  it('the client sends the published client messages and accepts the server signature', () => {
    const client = new ScramClientExchange('SCRAM-SHA-256', 'user', 'pencil', { nonce: 'rOprNGfwEbeRWgbNEkqO' });
    expect(client.clientFirst().toString()).toBe(clientFirst);
    expect(client.receiveServerFirst(text(serverFirst)).toString()).toBe(clientFinal);
    expect(() => client.receiveServerFinal(text(serverFinal))).not.toThrow();
  });

  it('keeps only salt, iterations and keys, and checks a password against them', async () => {
    expect(Object.keys(credential).sort()).toEqual(['iterations', 'salt', 'serverKey', 'storedKey']);
    expect([verifyPassword('SCRAM-SHA-256', credential, 'pencil'), verifyPassword('SCRAM-SHA-256', credential, 'pencil!')]).toEqual([true, false]);
    expect([await verifyPasswordAsync('SCRAM-SHA-256', credential, 'pencil'), await verifyPasswordAsync('SCRAM-SHA-256', credential, 'Pencil')]).toEqual([true, false]);
    expect(verifyPassword('SCRAM-SHA-512', credential, 'pencil')).toBe(false);
  });
});

describe('round trips', () => {
  for (const mechanism of ['SCRAM-SHA-256', 'SCRAM-SHA-512'] as const) {
    it(`${mechanism}: our client and server agree, at both iteration bounds`, () => {
      for (const iterations of [MIN_SCRAM_ITERATIONS, MAX_SCRAM_ITERATIONS]) {
        const credential = scramCredential(mechanism, 'correct horse', { iterations });
        expect(credential.storedKey).toHaveLength(mechanism === 'SCRAM-SHA-256' ? 32 : 64);
        expect(exchange(mechanism, credential, 'alice', 'correct horse')).toBe('alice');
      }
    });

    it(`${mechanism}: kafkajs's SCRAM client authenticates against our server`, async () => {
      const credential = scramCredential(mechanism, 'pä$$wörd', { iterations: 8192 });
      const server = new ScramServerExchange(mechanism);
      await kafkajsScram(mechanism, 'bob=x,y', 'pä$$wörd', (token) => {
        if (server.username !== undefined) return server.receiveClientFinal(token);
        server.receiveClientFirst(token);
        return server.serverFirst(credential);
      });
      expect([server.complete, server.username]).toEqual([true, 'bob=x,y']);
    });
  }

  it('escapes "=" and "," in the username (=3D, =2C) and unescapes them', () => {
    const client = new ScramClientExchange('SCRAM-SHA-512', 'a=b,c', 'pw');
    expect(client.clientFirst().toString()).toMatch(/^n,,n=a=3Db=2Cc,r=/);
    expect(exchange('SCRAM-SHA-512', scramCredential('SCRAM-SHA-512', 'pw'), 'a=b,c', 'pw')).toBe('a=b,c');
  });

  it('accepts "y,," (client could bind, thinks we cannot) when c= carries that header', () => {
    const server = new ScramServerExchange('SCRAM-SHA-256', { nonce: 'S' });
    server.receiveClientFirst(text('y,,n=user,r=C'));
    server.serverFirst(scramCredential('SCRAM-SHA-256', 'pw'));
    // c=eSws is base64("y,,"); the proof is wrong, so the refusal must name the proof, not the binding.
    expect(refusal(() => server.receiveClientFinal(text(`c=eSws,r=CS,p=${Buffer.alloc(32).toString('base64')}`)))).toBe('58 Authentication failed: invalid credentials with SASL mechanism SCRAM-SHA-256');
  });
});

describe('the server refuses', () => {
  const credential = scramCredential('SCRAM-SHA-512', 'right');

  function started(first = 'n,,n=alice,r=abc'): ScramServerExchange {
    const server = new ScramServerExchange('SCRAM-SHA-512', { nonce: 'XYZ' });
    server.receiveClientFirst(text(first));
    server.serverFirst(credential);
    return server;
  }

  it('a wrong password, then anything more (ILLEGAL_SASL_STATE)', () => {
    const client = new ScramClientExchange('SCRAM-SHA-512', 'alice', 'wrong');
    const server = new ScramServerExchange('SCRAM-SHA-512');
    server.receiveClientFirst(client.clientFirst());
    const final = client.receiveServerFirst(server.serverFirst(credential));
    expect(refusal(() => server.receiveClientFinal(final))).toBe('58 Authentication failed: invalid credentials with SASL mechanism SCRAM-SHA-512');
    expect(server.complete).toBe(false);
    expect(refusal(() => server.receiveClientFinal(final))).toMatch(/^34 /);
  });

  it('an unknown user the same way as a wrong password, at the proof, with a salt stable per user', () => {
    const salts = [0, 1].map(() => {
      const server = new ScramServerExchange('SCRAM-SHA-512');
      const client = new ScramClientExchange('SCRAM-SHA-512', 'nobody', 'guess');
      server.receiveClientFirst(client.clientFirst());
      const first = server.serverFirst(undefined);
      const final = client.receiveServerFirst(first);
      expect(refusal(() => server.receiveClientFinal(final))).toBe('58 Authentication failed: invalid credentials with SASL mechanism SCRAM-SHA-512');
      return /,s=([^,]+),i=4096$/.exec(first.toString())?.[1];
    });
    expect(salts[0]).toBeDefined();
    expect(salts[0]).toBe(salts[1]);
  });

  it('a client-final whose nonce is not the combined nonce', () => {
    expect(refusal(() => started().receiveClientFinal(text(`c=biws,r=abcXYW,p=${Buffer.alloc(64).toString('base64')}`)))).toBe('58 Authentication failed: invalid SCRAM nonce');
    expect(refusal(() => started().receiveClientFinal(text(`c=biws,r=abc,p=${Buffer.alloc(64).toString('base64')}`)))).toBe('58 Authentication failed: invalid SCRAM nonce');
  });

  it('a proof of the wrong length or not base64', () => {
    expect(refusal(() => started().receiveClientFinal(text(`c=biws,r=abcXYZ,p=${Buffer.alloc(32).toString('base64')}`)))).toMatch(/invalid credentials/);
    expect(refusal(() => started().receiveClientFinal(text('c=biws,r=abcXYZ,p=not*base64')))).toBe('58 Authentication failed: the SCRAM client proof is not base64');
    expect(refusal(() => started().receiveClientFinal(text('c=biws,r=abcXYZ')))).toBe('58 Authentication failed: the SCRAM client-final message has no proof');
  });

  it('channel binding and authorization ids in the gs2 header, and a c= that does not match it', () => {
    const server = (): ScramServerExchange => new ScramServerExchange('SCRAM-SHA-512');
    expect(refusal(() => server().receiveClientFirst(text('p=tls-unique,,n=alice,r=abc')))).toBe('58 Authentication failed: SCRAM channel binding is not supported');
    expect(refusal(() => server().receiveClientFirst(text('n,a=admin,n=alice,r=abc')))).toBe('58 Authentication failed: a SCRAM authorization id is not supported');
    expect(refusal(() => server().receiveClientFirst(text('x,,n=alice,r=abc')))).toMatch(/must start with n,,/);
    expect(refusal(() => started().receiveClientFinal(text(`c=eSws,r=abcXYZ,p=${Buffer.alloc(64).toString('base64')}`)))).toMatch(/channel binding \(c=\) does not match/);
  });

  it('delegation tokens (tokenauth=true) and reserved m= extensions; other extensions are ignored', () => {
    const server = (): ScramServerExchange => new ScramServerExchange('SCRAM-SHA-512');
    expect(refusal(() => server().receiveClientFirst(text('n,,n=alice,r=abc,tokenauth=true')))).toBe('58 Authentication failed: delegation tokens are not supported');
    expect(refusal(() => server().receiveClientFirst(text('n,,m=ext,n=alice,r=abc')))).toMatch(/mandatory extension/);
    expect(server().receiveClientFirst(text('n,,n=alice,r=abc,tokenauth=false,color=blue'))).toEqual({ username: 'alice' });
  });

  it('bad escapes, empty or control-character usernames, bad nonces', () => {
    const server = (): ScramServerExchange => new ScramServerExchange('SCRAM-SHA-512');
    expect(refusal(() => server().receiveClientFirst(text('n,,n=al=41ice,r=abc')))).toMatch(/"=" that is not "=2C" or "=3D"/);
    expect(refusal(() => server().receiveClientFirst(text('n,,n=,r=abc')))).toMatch(/username is empty/);
    expect(refusal(() => server().receiveClientFirst(text('n,,n=al\u0007ice,r=abc')))).toMatch(/control characters/);
    expect(refusal(() => server().receiveClientFirst(text('n,,n=alice,r=')))).toMatch(/invalid nonce/);
    expect(refusal(() => server().receiveClientFirst(text('n,,n=alice,r=a b')))).toMatch(/invalid nonce/);
    expect(refusal(() => server().receiveClientFirst(text('n,,r=abc,n=alice')))).toMatch(/n= expected/);
  });

  it('over-long messages and invalid UTF-8', () => {
    const server = (): ScramServerExchange => new ScramServerExchange('SCRAM-SHA-512');
    expect(refusal(() => server().receiveClientFirst(text(`n,,n=${'a'.repeat(5000)},r=abc`)))).toMatch(/longer than 4096 bytes/);
    expect(refusal(() => server().receiveClientFirst(Buffer.from([0x6e, 0x2c, 0x2c, 0x6e, 0x3d, 0xc3, 0x28, 0x2c, 0x72, 0x3d, 0x61])))).toMatch(/not valid UTF-8/);
  });

  it('a stored credential outside 4096–16384 iterations', () => {
    const server = new ScramServerExchange('SCRAM-SHA-512');
    server.receiveClientFirst(text('n,,n=alice,r=abc'));
    expect(refusal(() => server.serverFirst({ ...credential, iterations: 1000 }))).toMatch(/1000 iterations, outside 4096–16384/);
  });

  it('messages out of order (ILLEGAL_SASL_STATE)', () => {
    expect(refusal(() => new ScramServerExchange('SCRAM-SHA-256').receiveClientFinal(text('c=biws,r=a,p=AAAA')))).toMatch(/^34 Unexpected SASL message: /);
    expect(refusal(() => new ScramServerExchange('SCRAM-SHA-256').serverFirst(credential))).toMatch(/^34 /);
    const server = started();
    expect(refusal(() => server.receiveClientFirst(text('n,,n=alice,r=abc')))).toMatch(/^34 /);
  });

  it('every truncation of a valid client-final, and random bytes at each step, with a SaslError and nothing else', () => {
    const client = new ScramClientExchange('SCRAM-SHA-512', 'alice', 'right', { nonce: 'abc' });
    client.clientFirst();
    const final = client.receiveServerFirst(text(`r=abcXYZ,s=${credential.salt.toString('base64')},i=4096`));
    expect(refusal(() => started().receiveClientFinal(final))).toBe('accepted');
    for (let length = 0; length < final.length; length += 1) expect(refusal(() => started().receiveClientFinal(final.subarray(0, length)))).toMatch(/^58 /);
    let seed = 7;
    const byte = (): number => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      return seed >>> 24;
    };
    for (let round = 0; round < 300; round += 1) {
      const noise = Buffer.from(Array.from({ length: byte() }, byte));
      expect(refusal(() => new ScramServerExchange('SCRAM-SHA-256').receiveClientFirst(noise))).not.toBe('accepted');
      expect(refusal(() => started().receiveClientFinal(noise))).toMatch(/^58 /);
    }
  });
});

describe('the client refuses', () => {
  function sent(): ScramClientExchange {
    const client = new ScramClientExchange('SCRAM-SHA-256', 'user', 'pencil', { nonce: 'abc' });
    client.clientFirst();
    return client;
  }

  it('a server nonce that does not extend its own', () => {
    expect(refusal(() => sent().receiveServerFirst(text('r=abd123,s=QUJD,i=4096')))).toMatch(/does not extend the client nonce/);
    expect(refusal(() => sent().receiveServerFirst(text('r=abc,s=QUJD,i=4096')))).toMatch(/does not extend the client nonce/);
  });

  it('iterations outside 4096–16384 (a weak or a CPU-burning server)', () => {
    expect(refusal(() => sent().receiveServerFirst(text('r=abcS,s=QUJD,i=4095')))).toMatch(/4095 SCRAM iterations/);
    expect(refusal(() => sent().receiveServerFirst(text('r=abcS,s=QUJD,i=16385')))).toMatch(/16385 SCRAM iterations/);
    expect(refusal(() => sent().receiveServerFirst(text('r=abcS,s=QUJD,i=x')))).toMatch(/bad iteration count/);
  });

  it('a wrong server signature, and an e= error, and anything out of order', () => {
    const client = sent();
    client.receiveServerFirst(text('r=abcS,s=QUJD,i=4096'));
    expect(refusal(() => client.receiveServerFinal(text(`v=${Buffer.alloc(32).toString('base64')}`)))).toMatch(/server signature is wrong/);
    const refused = sent();
    refused.receiveServerFirst(text('r=abcS,s=QUJD,i=4096'));
    expect(refusal(() => refused.receiveServerFinal(text('e=invalid-proof')))).toBe('58 Authentication failed: the server refused: invalid-proof');
    expect(refusal(() => new ScramClientExchange('SCRAM-SHA-256', 'u', 'p').receiveServerFirst(text('r=x,s=QUJD,i=4096')))).toMatch(/^34 /);
    expect(refusal(() => sent().clientFirst())).toMatch(/^34 /);
  });
});

describe('scramCredential', () => {
  it('refuses iterations outside 4096–16384 and an empty password', () => {
    const codeOf = (action: () => unknown): unknown => {
      try {
        action();
      } catch (error) {
        return (error as { code?: unknown }).code;
      }
      return 'nothing';
    };
    for (const iterations of [4095, 16385, 4096.5]) expect(codeOf(() => scramCredential('SCRAM-SHA-512', 'pw', { iterations }))).toBe('SCRAM_ITERATIONS_INVALID');
    expect(codeOf(() => scramCredential('SCRAM-SHA-512', ''))).toBe('PASSWORD_EMPTY');
  });

  it('salts each credential afresh', () => {
    const [a, b] = [scramCredential('SCRAM-SHA-256', 'pw'), scramCredential('SCRAM-SHA-256', 'pw')];
    expect(a.salt.equals(b.salt)).toBe(false);
    expect(a.storedKey.equals(b.storedKey)).toBe(false);
    expect(a.iterations).toBe(4096);
  });

  it('verifyPassword is false for a credential outside the bounds (no unbounded PBKDF2)', () => {
    const credential = scramCredential('SCRAM-SHA-256', 'pw');
    expect(verifyPassword('SCRAM-SHA-256', { ...credential, iterations: 10_000_000 }, 'pw')).toBe(false);
  });
});

// -- kafkajs as an independent SCRAM client ----------------------------------------------------

interface KafkajsMessage {
  encode(): Promise<Buffer>;
}
interface KafkajsResponse {
  decode(raw: Buffer): Promise<unknown>;
  parse(data: unknown): Promise<unknown>;
}
type KafkajsScram = new (
  sasl: { username: string; password: string },
  host: string,
  port: number,
  logger: Record<'debug' | 'info' | 'warn' | 'error', () => void>,
  saslAuthenticate: (exchange: { request: KafkajsMessage; response: KafkajsResponse }) => Promise<unknown>,
  digest: unknown,
) => { authenticate(): Promise<void> };

/**
 * Runs kafkajs's SCRAM authenticator with `answer` in place of the broker. kafkajs frames each
 * token as BYTES (INT32 length + token) in both directions, as in SaslAuthenticate.
 */
async function kafkajsScram(mechanism: ScramMechanism, username: string, password: string, answer: (token: Buffer) => Buffer): Promise<void> {
  const load = createRequire(import.meta.url);
  const { SCRAM, DIGESTS } = load('kafkajs/src/broker/saslAuthenticator/scram.js') as { SCRAM: KafkajsScram; DIGESTS: Record<'SHA256' | 'SHA512', unknown> };
  const quiet = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };
  const scram = new SCRAM({ username, password }, 'localhost', 9092, quiet, async ({ request, response }) => {
    const reply = answer((await request.encode()).subarray(4));
    const framed = Buffer.concat([Buffer.from([0, 0, 0, 0]), reply]);
    framed.writeInt32BE(reply.length, 0);
    return response.parse(await response.decode(framed));
  }, DIGESTS[mechanism === 'SCRAM-SHA-256' ? 'SHA256' : 'SHA512']);
  await scram.authenticate();
}
