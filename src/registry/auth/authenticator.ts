/**
 * HTTP basic authentication of registry requests against a users file (users-file.ts).
 *
 * - The file is read at start (a bad file fails the start) and again whenever it changes (a
 *   polled stat, which also sees editors that replace the file) or `reload()` is called (SIGHUP).
 *   A file that fails to parse on reload is logged and the users already loaded stay.
 * - scrypt is deliberately slow (tens of ms), so a verified password is remembered as an HMAC
 *   under a key made at start (never the password itself); the memory is dropped on reload.
 *   At most two scrypt computations run at once, so a burst of bad logins cannot exhaust memory.
 * - Unknown users are hashed against a dummy hash too, so timing does not tell names apart, and
 *   digests are compared with timingSafeEqual.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { readFileSync, unwatchFile, watchFile, type Stats } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { TributaryError } from '../../common/errors.js';
import type { Logger } from '../../common/logger.js';
import { DEFAULT_SCRYPT, parseUsersFile, verifyPassword, type RegistryUser, type ScryptHash } from './users-file.js';

export type Authentication =
  | { readonly outcome: 'authenticated'; readonly user: RegistryUser }
  | { readonly outcome: 'missing' }
  | { readonly outcome: 'failed'; readonly reason: string };

const POLL_INTERVAL_MS = 1_000;
const MAX_CONCURRENT_HASHES = 2;

export class RegistryAuthenticator {
  private users: ReadonlyMap<string, RegistryUser>;
  private verified = new Map<string, Buffer>();
  private readonly cacheKey = randomBytes(32);
  private readonly dummy: ScryptHash = { ...DEFAULT_SCRYPT, salt: randomBytes(16), key: randomBytes(32) };
  private hashing = 0;
  private readonly queue: (() => void)[] = [];
  private watcher: ((current: Stats, previous: Stats) => void) | undefined;

  constructor(
    private readonly file: string,
    private readonly logger: Logger,
  ) {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (error) {
      throw new TributaryError({ code: 'CONFIG_INVALID', message: `cannot read the registry users file ${file}: ${(error as Error).message}`, cause: error });
    }
    this.users = parseUsersFile(text, file);
  }

  get userCount(): number {
    return this.users.size;
  }

  /** Re-reads the file when its size or modification time changes, until `close`. */
  watch(): void {
    if (this.watcher !== undefined) return;
    this.watcher = (current, previous) => {
      if (current.mtimeMs !== previous.mtimeMs || current.size !== previous.size || current.ino !== previous.ino) void this.reload();
    };
    watchFile(this.file, { interval: POLL_INTERVAL_MS, persistent: false }, this.watcher);
  }

  /** Reads the file again; keeps the users already loaded when it cannot. */
  async reload(): Promise<boolean> {
    try {
      this.users = parseUsersFile(await readFile(this.file, 'utf8'), this.file);
      this.verified = new Map();
      this.logger.info({ file: this.file, users: this.users.size }, 'registry users reloaded');
      return true;
    } catch (error) {
      this.logger.error({ err: error, file: this.file }, 'registry users file unreadable; keeping the users loaded before');
      return false;
    }
  }

  close(): void {
    if (this.watcher !== undefined) unwatchFile(this.file, this.watcher);
    this.watcher = undefined;
  }

  /** Checks an `Authorization` header value. */
  async authenticate(header: string | undefined): Promise<Authentication> {
    if (header === undefined || header.trim() === '') return { outcome: 'missing' };
    const match = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header.trim());
    if (match === null) return { outcome: 'failed', reason: 'not Basic credentials' };
    const decoded = Buffer.from(match[1] ?? '', 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon < 0) return { outcome: 'failed', reason: 'no ":" between user and password' };
    const name = decoded.slice(0, colon);
    const password = decoded.slice(colon + 1);
    const users = this.users;
    const user = users.get(name);
    const digest = createHmac('sha256', this.cacheKey).update(name).update('\0').update(password).digest();
    const known = user === undefined ? undefined : this.verified.get(name);
    if (user !== undefined && known !== undefined && timingSafeEqual(known, digest)) return { outcome: 'authenticated', user };
    const matches = await this.limited(() => verifyPassword(user?.hash ?? this.dummy, password));
    if (user === undefined || !matches) return { outcome: 'failed', reason: user === undefined ? 'unknown user' : 'wrong password' };
    // Only remember it if the file was not reloaded meanwhile.
    if (this.users === users) this.verified.set(name, digest);
    return { outcome: 'authenticated', user };
  }

  private async limited<T>(work: () => Promise<T>): Promise<T> {
    // A finished computation hands its slot straight to the next waiter.
    if (this.hashing < MAX_CONCURRENT_HASHES) this.hashing += 1;
    else await new Promise<void>((resolve) => this.queue.push(resolve));
    try {
      return await work();
    } finally {
      const next = this.queue.shift();
      if (next === undefined) this.hashing -= 1;
      else next();
    }
  }
}
