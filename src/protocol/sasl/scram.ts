/**
 * SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677; Kafka's KIP-84), both sides, pure:
 * node:crypto and nothing else. Message grammar: scram-messages.ts.
 *
 *   SaltedPassword  = PBKDF2-HMAC-H(password as UTF-8, salt, iterations)
 *   ClientKey       = HMAC(SaltedPassword, "Client Key")      StoredKey = H(ClientKey)
 *   ServerKey       = HMAC(SaltedPassword, "Server Key")
 *   AuthMessage     = client-first-bare "," server-first "," client-final-without-proof
 *   ClientProof     = ClientKey XOR HMAC(StoredKey, AuthMessage)
 *   ServerSignature = HMAC(ServerKey, AuthMessage)
 *
 * The server keeps only salt, iterations, StoredKey and ServerKey (ScramCredential) and checks
 * H(ClientProof XOR HMAC(StoredKey, AuthMessage)) == StoredKey. Kafka's bounds hold on both sides
 * and when a credential is made: 4096–16384 iterations. Like Kafka, the password is not SASLprep'd
 * (its UTF-8 bytes are used), so credentials made by Kafka's tools and ours agree. Secrets are
 * compared with crypto.timingSafeEqual.
 */
import { createHash, createHmac, pbkdf2, pbkdf2Sync, randomBytes, timingSafeEqual } from 'node:crypto';
import { promisify } from 'node:util';
import { TributaryError } from '../../common/errors.js';
import { authenticationFailed, illegalState, SaslError } from './sasl-error.js';
import { escapeUsername, parseClientFinal, parseClientFirst, parseServerFinal, parseServerFirst } from './scram-messages.js';

export { SaslError } from './sasl-error.js';

export type ScramMechanism = 'SCRAM-SHA-256' | 'SCRAM-SHA-512';

export const SCRAM_MECHANISMS: readonly ScramMechanism[] = ['SCRAM-SHA-256', 'SCRAM-SHA-512'];

/** Kafka's ScramMechanism bounds (kafka-clients.md §4.2); kafkajs refuses fewer than 4096. */
export const MIN_SCRAM_ITERATIONS = 4096;
export const MAX_SCRAM_ITERATIONS = 16384;

export interface ScramCredential {
  readonly salt: Buffer;
  readonly iterations: number;
  readonly storedKey: Buffer;
  readonly serverKey: Buffer;
}

export function isScramMechanism(name: string): name is ScramMechanism {
  return (SCRAM_MECHANISMS as readonly string[]).includes(name);
}

const HASHES: Readonly<Record<ScramMechanism, { readonly name: 'sha256' | 'sha512'; readonly bytes: number }>> = {
  'SCRAM-SHA-256': { name: 'sha256', bytes: 32 },
  'SCRAM-SHA-512': { name: 'sha512', bytes: 64 },
};

const pbkdf2Async = promisify(pbkdf2);

function hmac(mechanism: ScramMechanism, key: Buffer, text: string): Buffer {
  return createHmac(HASHES[mechanism].name, key).update(text, 'utf8').digest();
}

function hash(mechanism: ScramMechanism, data: Buffer): Buffer {
  return createHash(HASHES[mechanism].name).update(data).digest();
}

function xor(a: Buffer, b: Buffer): Buffer {
  const out = Buffer.alloc(a.length);
  for (let i = 0; i < a.length; i += 1) out[i] = (a[i] ?? 0) ^ (b[i] ?? 0);
  return out;
}

/** Equal lengths (not secret) and then equal bytes, in constant time. */
function sameBytes(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}

export function iterationsInRange(iterations: number): boolean {
  return Number.isSafeInteger(iterations) && iterations >= MIN_SCRAM_ITERATIONS && iterations <= MAX_SCRAM_ITERATIONS;
}

function keysOf(mechanism: ScramMechanism, salted: Buffer): { clientKey: Buffer; storedKey: Buffer; serverKey: Buffer } {
  const clientKey = hmac(mechanism, salted, 'Client Key');
  return { clientKey, storedKey: hash(mechanism, clientKey), serverKey: hmac(mechanism, salted, 'Server Key') };
}

function saltedPassword(mechanism: ScramMechanism, password: string, salt: Buffer, iterations: number): Buffer {
  return pbkdf2Sync(Buffer.from(password, 'utf8'), salt, iterations, HASHES[mechanism].bytes, HASHES[mechanism].name);
}

/** Salt, iterations and keys for a password; the password itself is not kept. */
export function scramCredential(mechanism: ScramMechanism, password: string, options: { salt?: Buffer; iterations?: number } = {}): ScramCredential {
  const iterations = options.iterations ?? MIN_SCRAM_ITERATIONS;
  if (!iterationsInRange(iterations)) {
    throw new TributaryError({
      code: 'SCRAM_ITERATIONS_INVALID',
      message: `${String(iterations)} SCRAM iterations is outside ${MIN_SCRAM_ITERATIONS}–${MAX_SCRAM_ITERATIONS} (the range Kafka and its clients accept)`,
      details: { iterations },
    });
  }
  if (password === '') throw new TributaryError({ code: 'PASSWORD_EMPTY', message: 'a SCRAM password must not be empty' });
  const salt = options.salt ?? randomBytes(32);
  if (salt.length === 0) throw new TributaryError({ code: 'SCRAM_SALT_INVALID', message: 'a SCRAM salt must not be empty' });
  const { storedKey, serverKey } = keysOf(mechanism, saltedPassword(mechanism, password, salt, iterations));
  return { salt: Buffer.from(salt), iterations, storedKey, serverKey };
}

function matches(mechanism: ScramMechanism, credential: ScramCredential, salted: Buffer): boolean {
  const { storedKey, serverKey } = keysOf(mechanism, salted);
  // Both compared, always: no early exit tells which one differed.
  const stored = sameBytes(storedKey, credential.storedKey);
  const server = sameBytes(serverKey, credential.serverKey);
  return stored && server;
}

/**
 * Whether `password` is the one `credential` was made from (PLAIN against stored SCRAM keys).
 * PBKDF2 runs on this thread for a few milliseconds: prefer verifyPasswordAsync in a server.
 */
export function verifyPassword(mechanism: ScramMechanism, credential: ScramCredential, password: string): boolean {
  if (!iterationsInRange(credential.iterations) || credential.salt.length === 0) return false;
  return matches(mechanism, credential, saltedPassword(mechanism, password, credential.salt, credential.iterations));
}

/** verifyPassword with PBKDF2 on libuv's thread pool, so the event loop keeps serving. */
export async function verifyPasswordAsync(mechanism: ScramMechanism, credential: ScramCredential, password: string): Promise<boolean> {
  if (!iterationsInRange(credential.iterations) || credential.salt.length === 0) return false;
  const { name, bytes } = HASHES[mechanism];
  const salted = await pbkdf2Async(Buffer.from(password, 'utf8'), credential.salt, credential.iterations, bytes, name);
  return matches(mechanism, credential, salted);
}

/** A server nonce part: 24 random bytes in base64 (printable, no ","). */
function freshNonce(): string {
  return randomBytes(24).toString('base64');
}

/**
 * Keys no password produces, for a user that does not exist: the exchange runs to the proof and
 * fails there as a wrong password would, with a salt that is stable per user for the process's
 * life, so a client cannot tell unknown users from known ones (RFC 5802 §9).
 */
const DECOY_SECRET = randomBytes(32);

function decoyCredential(mechanism: ScramMechanism, username: string): ScramCredential {
  const salt = createHmac('sha256', DECOY_SECRET).update(`${mechanism}\u0000${username}`, 'utf8').digest();
  return { salt, iterations: MIN_SCRAM_ITERATIONS, storedKey: randomBytes(HASHES[mechanism].bytes), serverKey: randomBytes(HASHES[mechanism].bytes) };
}

type ServerStep = 'client-first' | 'server-first' | 'client-final' | 'done' | 'failed';

/**
 * The broker's side of one exchange: receiveClientFirst → (look the user up) → serverFirst →
 * receiveClientFinal. Any failure, or a call out of order, throws SaslError and ends the exchange.
 */
export class ScramServerExchange {
  private step: ServerStep = 'client-first';
  private clientFirstBare = '';
  private gs2Header = '';
  private nonce = '';
  private serverFirstMessage = '';
  private credential: ScramCredential | undefined;
  private knownUser = false;
  private user: string | undefined;

  /** `options.nonce` fixes the server's nonce part (tests with published vectors only). */
  constructor(
    readonly mechanism: ScramMechanism,
    private readonly options: { readonly nonce?: string } = {},
  ) {}

  /** The username of the client-first message, once received. */
  get username(): string | undefined {
    return this.user;
  }

  /** True once the client's proof checked out and the server-final message was made. */
  get complete(): boolean {
    return this.step === 'done';
  }

  receiveClientFirst(message: Buffer): { username: string } {
    return this.run('client-first', 'client-first message', () => {
      const first = parseClientFirst(message);
      // Kafka's delegation tokens authenticate with SCRAM plus this extension; there are none here.
      if (first.extensions.get('tokenauth')?.toLowerCase() === 'true') throw authenticationFailed('delegation tokens are not supported');
      this.clientFirstBare = first.bare;
      this.gs2Header = first.gs2Header;
      this.nonce = first.nonce + (this.options.nonce ?? freshNonce());
      this.user = first.username;
      this.step = 'server-first';
      return { username: first.username };
    });
  }

  /**
   * The server-first message for the user's stored credential. Pass `undefined` for an unknown
   * user: the exchange goes on with decoy keys and fails at the proof, like a wrong password.
   */
  serverFirst(credential: ScramCredential | undefined): Buffer {
    return this.run('server-first', 'server-first requested', () => {
      if (credential !== undefined && !iterationsInRange(credential.iterations)) {
        throw authenticationFailed(`the stored ${this.mechanism} credential has ${credential.iterations} iterations, outside ${MIN_SCRAM_ITERATIONS}–${MAX_SCRAM_ITERATIONS}; set it again`);
      }
      this.knownUser = credential !== undefined;
      this.credential = credential ?? decoyCredential(this.mechanism, this.user ?? '');
      this.serverFirstMessage = `r=${this.nonce},s=${this.credential.salt.toString('base64')},i=${this.credential.iterations}`;
      this.step = 'client-final';
      return Buffer.from(this.serverFirstMessage, 'utf8');
    });
  }

  /** Checks the proof and returns the server-final message (`v=` ServerSignature). */
  receiveClientFinal(message: Buffer): Buffer {
    return this.run('client-final', 'client-final message', () => {
      const final = parseClientFinal(message);
      if (final.channelBinding !== Buffer.from(this.gs2Header, 'utf8').toString('base64')) {
        throw authenticationFailed('the SCRAM channel binding (c=) does not match the client-first header');
      }
      // Kafka checks endsWith, not equality: librdkafka (2.0.2 at least) sends its client nonce
      // again before the combined one. The proof covers the message as sent, so nothing is lost.
      if (!final.nonce.endsWith(this.nonce)) throw authenticationFailed('invalid SCRAM nonce');
      const credential = this.credential as ScramCredential;
      const authMessage = `${this.clientFirstBare},${this.serverFirstMessage},${final.withoutProof}`;
      const signature = hmac(this.mechanism, credential.storedKey, authMessage);
      const valid = final.proof.length === signature.length && sameBytes(hash(this.mechanism, xor(final.proof, signature)), credential.storedKey);
      if (!valid || !this.knownUser) throw authenticationFailed(`invalid credentials with SASL mechanism ${this.mechanism}`);
      this.step = 'done';
      return Buffer.from(`v=${hmac(this.mechanism, credential.serverKey, authMessage).toString('base64')}`, 'utf8');
    });
  }

  private run<T>(expected: ServerStep, what: string, action: () => T): T {
    if (this.step !== expected) {
      const at = this.step;
      this.fail();
      throw illegalState(`${what} while the SCRAM exchange ${at === 'done' || at === 'failed' ? `is ${at}` : `expected the ${at} step`}`);
    }
    try {
      return action();
    } catch (error) {
      this.fail();
      throw error instanceof SaslError ? error : new SaslError('SASL_AUTHENTICATION_FAILED', 'Authentication failed: the SCRAM exchange failed', { cause: error });
    }
  }

  private fail(): void {
    this.step = 'failed';
    this.credential = undefined;
  }
}

type ClientStep = 'client-first' | 'server-first' | 'server-final' | 'done' | 'failed';

/**
 * Our clients' side of one exchange: clientFirst → receiveServerFirst (returns client-final) →
 * receiveServerFinal, which proves the server knew the keys. Any failure throws SaslError.
 */
export class ScramClientExchange {
  private step: ClientStep = 'client-first';
  private readonly clientNonce: string;
  private clientFirstBare = '';
  private password: string | undefined;
  private expectedSignature: Buffer | undefined;

  /** `options.nonce` fixes the client nonce (tests with published vectors only). */
  constructor(
    readonly mechanism: ScramMechanism,
    private readonly username: string,
    password: string,
    options: { readonly nonce?: string } = {},
  ) {
    this.password = password;
    this.clientNonce = options.nonce ?? randomBytes(24).toString('base64');
  }

  clientFirst(): Buffer {
    return this.run('client-first', () => {
      this.clientFirstBare = `n=${escapeUsername(this.username)},r=${this.clientNonce}`;
      this.step = 'server-first';
      return Buffer.from(`n,,${this.clientFirstBare}`, 'utf8');
    });
  }

  receiveServerFirst(message: Buffer): Buffer {
    return this.run('server-first', () => {
      const first = parseServerFirst(message);
      if (!first.nonce.startsWith(this.clientNonce) || first.nonce.length === this.clientNonce.length) {
        throw authenticationFailed('the server nonce does not extend the client nonce');
      }
      // Bounded both ways: too few is weak, too many lets a server make us burn CPU.
      if (!iterationsInRange(first.iterations)) {
        throw authenticationFailed(`the server asks for ${first.iterations} SCRAM iterations, outside ${MIN_SCRAM_ITERATIONS}–${MAX_SCRAM_ITERATIONS}`);
      }
      const salted = saltedPassword(this.mechanism, this.password ?? '', first.salt, first.iterations);
      this.password = undefined;
      const { clientKey, storedKey, serverKey } = keysOf(this.mechanism, salted);
      const withoutProof = `c=biws,r=${first.nonce}`;
      const authMessage = `${this.clientFirstBare},${message.toString('utf8')},${withoutProof}`;
      const proof = xor(clientKey, hmac(this.mechanism, storedKey, authMessage));
      this.expectedSignature = hmac(this.mechanism, serverKey, authMessage);
      this.step = 'server-final';
      return Buffer.from(`${withoutProof},p=${proof.toString('base64')}`, 'utf8');
    });
  }

  receiveServerFinal(message: Buffer): void {
    this.run('server-final', () => {
      const final = parseServerFinal(message);
      if ('error' in final) throw authenticationFailed(`the server refused: ${final.error.replace(/[^\x20-\x7e]/g, '?').slice(0, 200)}`);
      if (!sameBytes(final.verifier, this.expectedSignature ?? Buffer.alloc(0))) throw authenticationFailed('the server signature is wrong: the server does not hold this user\'s keys');
      this.step = 'done';
    });
  }

  private run<T>(expected: ClientStep, action: () => T): T {
    if (this.step !== expected) {
      const at = this.step;
      this.step = 'failed';
      this.password = undefined;
      throw illegalState(`the SCRAM client was asked for the ${expected} step while at ${at}`);
    }
    try {
      return action();
    } catch (error) {
      this.step = 'failed';
      this.password = undefined;
      throw error instanceof SaslError ? error : new SaslError('SASL_AUTHENTICATION_FAILED', 'Authentication failed: the SCRAM exchange failed', { cause: error });
    }
  }
}
