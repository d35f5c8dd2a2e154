/**
 * `tributary users add|remove|list`: the SASL/SCRAM users of a cluster, kept in its coordination
 * store at /config/users/<user> in Kafka's format (coordination/user-credentials.ts). Brokers
 * watch those nodes, so a change counts for the next login without a restart.
 *
 * A password never comes from a flag (argv is visible to every local user and lands in shell
 * history): it is read from --password-file, from standard input with --password-stdin, or from
 * TRIBUTARY_USER_PASSWORD. Only salts and derived keys are stored; `list` shows no key.
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { TributaryError } from '../../common/errors.js';
import { MemoryCoordination } from '../../coordination/memory-store.js';
import type { CoordinationStore } from '../../coordination/store.js';
import { listUsers, putUserCredential, readUserCredentials, removeUser } from '../../coordination/user-credentials.js';
import { ZooKeeperStore } from '../../coordination/zookeeper-store.js';
import { MAX_PLAIN_FIELD_BYTES } from '../../protocol/sasl/plain.js';
import { hasControlCharacter } from '../../protocol/sasl/scram-messages.js';
import { isScramMechanism, MAX_SCRAM_ITERATIONS, MIN_SCRAM_ITERATIONS, scramCredential, SCRAM_MECHANISMS, type ScramMechanism } from '../../protocol/sasl/scram.js';
import { CLEAN_SHUTDOWN_MARKER, META_PROPERTIES } from '../../storage/log-manager.js';
import type { CommandIo } from '../not-implemented.js';
import { STANDALONE_STATE_FILE, USER_PASSWORD_ENV } from '../command-constants.js';

export interface UsersConnection {
  readonly zookeeper?: string;
  readonly dataDir?: string;
}

export interface UsersAddOptions extends UsersConnection {
  /** Absent when no --mechanism was given (refused). */
  readonly mechanism?: readonly string[];
  /** A hidden flag that exists only to be refused without echoing its value. */
  readonly password?: string;
  readonly iterations?: string;
  readonly passwordFile?: string;
  readonly passwordStdin?: boolean;
}

export interface UsersRemoveOptions extends UsersConnection {
  readonly mechanism?: string;
}

/** Where a password may come from besides a file: the process's stdin and environment. */
export interface PasswordSources {
  readonly stdin: AsyncIterable<Buffer | string>;
  readonly env: Readonly<Record<string, string | undefined>>;
}

function invalid(message: string): TributaryError {
  return new TributaryError({ code: 'CONFIG_INVALID', message });
}

async function withStore<T>(options: UsersConnection, run: (store: CoordinationStore) => Promise<T>): Promise<T> {
  if ((options.zookeeper === undefined) === (options.dataDir === undefined)) {
    throw invalid(
      `${options.zookeeper === undefined ? 'neither --zookeeper nor --data-dir' : 'both --zookeeper and --data-dir'} given: give exactly one. ` +
        "--zookeeper HOST:PORT[/chroot] reaches a cluster's store; --data-dir DIR a stopped standalone broker's",
    );
  }
  const store = options.zookeeper === undefined ? standaloneStore(options.dataDir ?? '') : await ZooKeeperStore.connect(options.zookeeper);
  try {
    return await run(store);
  } finally {
    await store.close();
  }
}

/**
 * The store file of a standalone broker. Refused while that broker may be running: it keeps the
 * tree in memory and would write over the change, so the user would vanish at its next write.
 */
function standaloneStore(dataDir: string): CoordinationStore {
  if (!existsSync(dataDir)) throw invalid(`--data-dir ${dataDir} does not exist; give the data dir of a standalone broker`);
  if (existsSync(join(dataDir, META_PROPERTIES)) && !existsSync(join(dataDir, CLEAN_SHUTDOWN_MARKER))) {
    throw new TributaryError({
      code: 'BROKER_RUNNING',
      message: `the standalone broker of ${dataDir} is running or did not stop cleanly (no ${CLEAN_SHUTDOWN_MARKER}): stop it (SIGTERM) and run this again; it reads its users at start`,
      details: { dataDir },
    });
  }
  return new MemoryCoordination({ file: join(dataDir, STANDALONE_STATE_FILE) }).session();
}

function userName(name: string): string {
  if (name === '' || hasControlCharacter(name)) throw invalid('a user name must be non-empty and free of control characters');
  return name;
}

function mechanismOf(value: string): ScramMechanism {
  const upper = value.toUpperCase();
  if (!isScramMechanism(upper)) throw invalid(`--mechanism takes ${SCRAM_MECHANISMS.join(' or ')}, not ${value}`);
  return upper;
}

/** Drops one trailing newline (what `echo` and editors leave), nothing else. */
function withoutNewline(text: string): string {
  return text.endsWith('\r\n') ? text.slice(0, -2) : text.endsWith('\n') ? text.slice(0, -1) : text;
}

async function readAll(stream: AsyncIterable<Buffer | string>, limit: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of stream) {
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk;
    size += bytes.length;
    if (size > limit) throw invalid(`standard input holds more than ${limit} bytes; a password is at most ${MAX_PLAIN_FIELD_BYTES}`);
    chunks.push(bytes);
  }
  return Buffer.concat(chunks).toString('utf8');
}

async function readPassword(io: CommandIo, options: UsersAddOptions, sources: PasswordSources): Promise<string> {
  if (options.password !== undefined) throw invalid(`--password is not accepted (the command line is visible to other users): use --password-file, --password-stdin or ${USER_PASSWORD_ENV}`);
  if (options.passwordFile !== undefined && options.passwordStdin === true) throw invalid('both --password-file and --password-stdin given: give one');
  let password: string;
  if (options.passwordFile !== undefined) {
    let text: string;
    try {
      text = readFileSync(options.passwordFile, 'utf8');
      // Like ssh with its keys: a password file others can read is worth a warning.
      if (process.platform !== 'win32' && (statSync(options.passwordFile).mode & 0o077) !== 0) {
        io.writeErr(`tributary: warning: ${options.passwordFile} is readable by other users; chmod 600 it\n`);
      }
    } catch (error) {
      throw new TributaryError({ code: 'CONFIG_INVALID', message: `cannot read --password-file ${options.passwordFile}: ${error instanceof Error ? error.message : String(error)}`, cause: error });
    }
    password = withoutNewline(text);
  } else if (options.passwordStdin === true) {
    password = withoutNewline(await readAll(sources.stdin, 64 * 1024));
  } else {
    const fromEnv = sources.env[USER_PASSWORD_ENV];
    if (fromEnv === undefined) throw invalid(`no password: give --password-file FILE or --password-stdin, or set ${USER_PASSWORD_ENV} (never a flag)`);
    password = fromEnv;
  }
  if (password === '') throw invalid('the password is empty');
  // PLAIN logins carry the password in a field of at most this size (protocol/sasl/plain.ts).
  if (Buffer.byteLength(password, 'utf8') > MAX_PLAIN_FIELD_BYTES) throw invalid(`the password is longer than ${MAX_PLAIN_FIELD_BYTES} bytes`);
  if (password.includes('\u0000')) throw invalid('the password contains a NUL character');
  return password;
}

export async function addUser(io: CommandIo, name: string, options: UsersAddOptions, sources: PasswordSources): Promise<void> {
  const user = userName(name);
  const mechanisms = [...new Set((options.mechanism ?? []).map(mechanismOf))];
  if (mechanisms.length === 0) throw invalid(`give --mechanism ${SCRAM_MECHANISMS.join(' or ')} (repeatable)`);
  const iterations = options.iterations === undefined ? MIN_SCRAM_ITERATIONS : Number(options.iterations);
  if (!Number.isSafeInteger(iterations) || iterations < MIN_SCRAM_ITERATIONS || iterations > MAX_SCRAM_ITERATIONS) {
    throw invalid(`--iterations takes a whole number from ${MIN_SCRAM_ITERATIONS} to ${MAX_SCRAM_ITERATIONS} (Kafka's bounds), not ${options.iterations ?? ''}`);
  }
  const password = await readPassword(io, options, sources);
  await withStore(options, async (store) => {
    const before = await readUserCredentials(store, user);
    for (const mechanism of mechanisms) {
      await putUserCredential(store, user, mechanism, scramCredential(mechanism, password, { iterations }));
      io.writeOut(`${before.has(mechanism) ? 'updated' : 'added'} ${mechanism} credential of user ${user} (${iterations} iterations)\n`);
    }
  });
}

export async function removeUserCommand(io: CommandIo, name: string, options: UsersRemoveOptions): Promise<void> {
  const user = userName(name);
  const mechanism = options.mechanism === undefined ? undefined : mechanismOf(options.mechanism);
  await withStore(options, async (store) => {
    if (!(await removeUser(store, user, mechanism))) {
      throw new TributaryError({ code: 'USER_NOT_FOUND', message: `user ${user} has no ${mechanism ?? 'SCRAM'} credential; tributary users list shows the users` });
    }
    io.writeOut(mechanism === undefined ? `removed user ${user}\n` : `removed ${mechanism} credential of user ${user}\n`);
  });
}

export async function listUsersCommand(io: CommandIo, options: UsersConnection): Promise<void> {
  const listings = await withStore(options, (store) => listUsers(store));
  const rows = listings.map(({ user, mechanisms, problem }) => [user, problem ?? mechanisms.map(({ mechanism, iterations }) => `${mechanism} (${iterations} iterations)`).join(', ')]);
  const width = Math.max(4, ...rows.map(([user]) => (user ?? '').length)) + 2;
  io.writeOut(`${'user'.padEnd(width)}mechanisms\n`);
  for (const [user, mechanisms] of rows) io.writeOut(`${(user ?? '').padEnd(width)}${mechanisms ?? ''}\n`);
}
