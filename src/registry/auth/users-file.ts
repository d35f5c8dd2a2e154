/**
 * The registry's users file: who may call the REST API, with which role, and a scrypt hash of
 * each password (no password is stored).
 *
 * Grammar (UTF-8 text, one user a line; blank lines and lines starting with `#` are ignored):
 *
 *   line  = name ":" role ":" hash
 *   name  = 1*( any character but ":" and whitespace )
 *   role  = "read-only" | "writer" | "admin"
 *   hash  = "scrypt$" N "$" r "$" p "$" salt "$" key     ; N, r, p decimal; salt, key base64
 *
 * `key` is scrypt(password, salt, len(key), {N, r, p}) (RFC 7914). `tributary registry user-line`
 * writes such a line (N=16384, r=8, p=1, 16-byte salt, 32-byte key). The parameters are bounded
 * when read, so a bad line cannot make every login allocate gigabytes.
 */
import { randomBytes, scrypt as scryptCallback, timingSafeEqual, type ScryptOptions } from 'node:crypto';
import { TributaryError } from '../../common/errors.js';

export const REGISTRY_ROLES = ['read-only', 'writer', 'admin'] as const;
export type RegistryRole = (typeof REGISTRY_ROLES)[number];

export interface ScryptHash {
  readonly N: number;
  readonly r: number;
  readonly p: number;
  readonly salt: Buffer;
  readonly key: Buffer;
}

export interface RegistryUser {
  readonly name: string;
  readonly role: RegistryRole;
  readonly hash: ScryptHash;
}

export const DEFAULT_SCRYPT = { N: 16_384, r: 8, p: 1 } as const;
const SALT_BYTES = 16;
const KEY_BYTES = 32;
/** 2^20 with r=8 is 1 GiB of memory per hash: nobody needs more, and a typo should not allow it. */
const MAX_N = 2 ** 20;
const MAX_R = 32;
const MAX_P = 16;
const NAME = /^[^:\s]+$/;
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

/** The users of a file's text, by name; CONFIG_INVALID naming `source` and the line otherwise. */
export function parseUsersFile(text: string, source: string): ReadonlyMap<string, RegistryUser> {
  const users = new Map<string, RegistryUser>();
  text.split(/\r?\n/).forEach((raw, index) => {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) return;
    const where = `${source} line ${index + 1}`;
    const [name = '', role = '', hash = '', ...rest] = line.split(':');
    if (rest.length > 0 || !NAME.test(name)) throw invalid(`${where}: expected name:role:scrypt$N$r$p$salt$key (the name without ":" or spaces)`);
    if (!(REGISTRY_ROLES as readonly string[]).includes(role)) throw invalid(`${where}: role "${role}" is not one of ${REGISTRY_ROLES.join(', ')}`);
    if (users.has(name)) throw invalid(`${where}: user "${name}" appears twice`);
    users.set(name, { name, role: role as RegistryRole, hash: parseScryptHash(hash, where) });
  });
  return users;
}

export function parseScryptHash(text: string, where: string): ScryptHash {
  const parts = text.split('$');
  const [scheme, n, r, p, salt, key] = parts;
  if (parts.length !== 6 || scheme !== 'scrypt' || salt === undefined || key === undefined || !BASE64.test(salt) || !BASE64.test(key)) {
    throw invalid(`${where}: the hash is not scrypt$N$r$p$<salt base64>$<key base64>; make the line with "tributary registry user-line"`);
  }
  const N = Number(n);
  const hash = { N, r: Number(r), p: Number(p), salt: Buffer.from(salt, 'base64'), key: Buffer.from(key, 'base64') };
  const powerOfTwo = Number.isSafeInteger(N) && N > 1 && (N & (N - 1)) === 0;
  if (!powerOfTwo || N > MAX_N || !inRange(hash.r, 1, MAX_R) || !inRange(hash.p, 1, MAX_P) || hash.key.length < 16 || hash.key.length > 64) {
    throw invalid(`${where}: scrypt parameters out of range (N a power of two up to 2^20, r 1–${MAX_R}, p 1–${MAX_P}, key 16–64 bytes)`);
  }
  return hash;
}

/** A new users-file line for `name` with a fresh salt. */
export async function userLine(name: string, role: RegistryRole, password: string): Promise<string> {
  if (!NAME.test(name)) throw invalid(`the user name "${name}" may not be empty or contain ":" or whitespace`);
  if (password === '') throw invalid('the password is empty');
  const salt = randomBytes(SALT_BYTES);
  const key = await scrypt(password, salt, KEY_BYTES, DEFAULT_SCRYPT);
  return `${name}:${role}:scrypt$${DEFAULT_SCRYPT.N}$${DEFAULT_SCRYPT.r}$${DEFAULT_SCRYPT.p}$${salt.toString('base64')}$${key.toString('base64')}`;
}

/** Whether `password` hashes to `hash.key`, compared in constant time. */
export async function verifyPassword(hash: ScryptHash, password: string): Promise<boolean> {
  const key = await scrypt(password, hash.salt, hash.key.length, hash);
  return timingSafeEqual(key, hash.key);
}

function scrypt(password: string, salt: Buffer, length: number, parameters: { N: number; r: number; p: number }): Promise<Buffer> {
  // Node refuses more than 32 MiB by default; the bounds above keep this finite.
  const options: ScryptOptions = { ...parameters, maxmem: 128 * parameters.N * parameters.r * parameters.p + 64 * 1024 * 1024 };
  return new Promise((resolve, reject) => {
    scryptCallback(password.normalize('NFC'), salt, length, options, (error, key) => (error === null ? resolve(key) : reject(error)));
  });
}

function inRange(value: number, low: number, high: number): boolean {
  return Number.isSafeInteger(value) && value >= low && value <= high;
}

function invalid(message: string): TributaryError {
  return new TributaryError({ code: 'CONFIG_INVALID', message });
}
