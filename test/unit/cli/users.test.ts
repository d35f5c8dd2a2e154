/**
 * `tributary users` in this process, against a standalone broker's store file in a temporary
 * data dir: where the password may come from (never a flag), what is printed, what is stored.
 */
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { CommanderError, type Command } from 'commander';
import { afterEach, describe, expect, it } from 'vitest';
import { STANDALONE_STATE_FILE } from '../../../src/cli/commands/broker.js';
import { addUser, listUsersCommand, removeUserCommand, type PasswordSources } from '../../../src/cli/commands/users.js';
import { buildProgram } from '../../../src/cli/program.js';
import { MemoryCoordination } from '../../../src/coordination/memory-store.js';
import { readUserCredentials } from '../../../src/coordination/user-credentials.js';
import { verifyPassword } from '../../../src/protocol/sasl/scram.js';

const directories: string[] = [];
afterEach(() => {
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

function dataDir(): string {
  const directory = mkdtempSync(join(tmpdir(), 'users-cli-'));
  directories.push(directory);
  return directory;
}

function capture(): { io: { writeOut: (text: string) => void; writeErr: (text: string) => void }; out: () => string; err: () => string } {
  let out = '';
  let err = '';
  return { io: { writeOut: (text) => void (out += text), writeErr: (text) => void (err += text) }, out: () => out, err: () => err };
}

function sources(env: Record<string, string> = {}, stdin: string[] = []): PasswordSources {
  return { env, stdin: Readable.from(stdin.map((text) => Buffer.from(text))) };
}

async function passwordWorks(directory: string, user: string, mechanism: 'SCRAM-SHA-256' | 'SCRAM-SHA-512', password: string): Promise<boolean> {
  const store = new MemoryCoordination({ file: join(directory, STANDALONE_STATE_FILE) }).session();
  const credential = (await readUserCredentials(store, user)).get(mechanism);
  await store.close();
  return credential !== undefined && verifyPassword(mechanism, credential, password);
}

async function failure(action: () => Promise<unknown>): Promise<string> {
  try {
    await action();
  } catch (error) {
    return `${(error as { code?: string }).code ?? ''}: ${(error as Error).message}`;
  }
  return 'nothing';
}

describe('tributary users add', () => {
  it('takes the password from TRIBUTARY_USER_PASSWORD, stores keys only, and says what it did', async () => {
    const directory = dataDir();
    const { io, out } = capture();
    await addUser(io, 'alice', { mechanism: ['SCRAM-SHA-512', 'scram-sha-256'], iterations: '8192', dataDir: directory }, sources({ TRIBUTARY_USER_PASSWORD: 'env-secret' }));
    expect(out()).toBe('added SCRAM-SHA-512 credential of user alice (8192 iterations)\nadded SCRAM-SHA-256 credential of user alice (8192 iterations)\n');
    expect(await passwordWorks(directory, 'alice', 'SCRAM-SHA-512', 'env-secret')).toBe(true);
    expect(await passwordWorks(directory, 'alice', 'SCRAM-SHA-256', 'env-secret')).toBe(true);
    expect(readFileSync(join(directory, STANDALONE_STATE_FILE), 'utf8')).not.toContain(Buffer.from('env-secret').toString('base64'));
  });

  it('takes it from --password-file or --password-stdin, without the trailing newline, and warns about a file others can read', async () => {
    const directory = dataDir();
    const file = join(directory, 'pw');
    writeFileSync(file, 'file-secret\n');
    chmodSync(file, 0o644);
    const first = capture();
    await addUser(first.io, 'bob', { mechanism: ['SCRAM-SHA-256'], passwordFile: file, dataDir: directory }, sources({ TRIBUTARY_USER_PASSWORD: 'ignored' }));
    expect(first.err()).toContain(`${file} is readable by other users; chmod 600 it`);
    expect(await passwordWorks(directory, 'bob', 'SCRAM-SHA-256', 'file-secret')).toBe(true);

    const second = capture();
    await addUser(second.io, 'bob', { mechanism: ['SCRAM-SHA-256'], passwordStdin: true, dataDir: directory }, sources({}, ['stdin-', 'secret\r\n']));
    expect(second.out()).toBe('updated SCRAM-SHA-256 credential of user bob (4096 iterations)\n');
    expect(await passwordWorks(directory, 'bob', 'SCRAM-SHA-256', 'stdin-secret')).toBe(true);
  });

  it('refuses no password, an empty one, two sources, bad iterations and an unknown mechanism', async () => {
    const directory = dataDir();
    const { io } = capture();
    const add = (options: Partial<Parameters<typeof addUser>[2]>, from = sources()) => failure(() => addUser(io, 'carol', { mechanism: ['SCRAM-SHA-512'], dataDir: directory, ...options }, from));
    expect(await add({})).toMatch(/^CONFIG_INVALID: no password: give --password-file FILE or --password-stdin, or set TRIBUTARY_USER_PASSWORD/);
    expect(await add({}, sources({ TRIBUTARY_USER_PASSWORD: '' }))).toBe('CONFIG_INVALID: the password is empty');
    expect(await add({ passwordStdin: true, passwordFile: '/x' })).toMatch(/both --password-file and --password-stdin/);
    expect(await add({ iterations: '1000' }, sources({ TRIBUTARY_USER_PASSWORD: 'p' }))).toMatch(/--iterations takes a whole number from 4096 to 16384/);
    expect(await add({ mechanism: ['PLAIN'] }, sources({ TRIBUTARY_USER_PASSWORD: 'p' }))).toMatch(/--mechanism takes SCRAM-SHA-256 or SCRAM-SHA-512, not PLAIN/);
    expect(await add({ mechanism: [] }, sources({ TRIBUTARY_USER_PASSWORD: 'p' }))).toMatch(/give --mechanism/);
  });

  it('refuses --password on the command line without repeating its value', async () => {
    const directory = dataDir();
    const { io, out, err } = capture();
    const program = buildProgram(io);
    const override = (command: Command): void => {
      command.exitOverride();
      for (const sub of command.commands) override(sub);
    };
    override(program);
    const message = await failure(() => program.parseAsync(['users', 'add', 'dan', '--mechanism', 'SCRAM-SHA-512', '--password', 'hunter2', '--data-dir', directory], { from: 'user' }));
    expect(message).toMatch(/^CONFIG_INVALID: --password is not accepted/);
    expect(message + out() + err()).not.toContain('hunter2');
  });

  it('refuses the data dir of a standalone broker that is running (it would write over the change)', async () => {
    const directory = dataDir();
    writeFileSync(join(directory, 'meta.properties'), 'broker.id=1\n');
    const { io } = capture();
    expect(await failure(() => addUser(io, 'erin', { mechanism: ['SCRAM-SHA-512'], dataDir: directory }, sources({ TRIBUTARY_USER_PASSWORD: 'p' })))).toMatch(/^BROKER_RUNNING: /);
    writeFileSync(join(directory, '.clean-shutdown'), '');
    await addUser(io, 'erin', { mechanism: ['SCRAM-SHA-512'], dataDir: directory }, sources({ TRIBUTARY_USER_PASSWORD: 'p' }));
    expect(await passwordWorks(directory, 'erin', 'SCRAM-SHA-512', 'p')).toBe(true);
  });

  it('takes exactly one of --zookeeper and --data-dir', async () => {
    const { io } = capture();
    expect(await failure(() => listUsersCommand(io, {}))).toMatch(/^CONFIG_INVALID: neither --zookeeper nor --data-dir given/);
    expect(await failure(() => listUsersCommand(io, { zookeeper: 'localhost:1', dataDir: '/tmp' }))).toMatch(/both --zookeeper and --data-dir given/);
  });
});

describe('tributary users list and remove', () => {
  it('lists names, mechanisms and iterations (no keys), and removes one mechanism or the user', async () => {
    const directory = dataDir();
    const { io, out } = capture();
    const env = sources({ TRIBUTARY_USER_PASSWORD: 'pw' });
    await addUser(io, 'CN=client,O=acme', { mechanism: ['SCRAM-SHA-256'], dataDir: directory }, env);
    await addUser(io, 'zoe', { mechanism: ['SCRAM-SHA-512', 'SCRAM-SHA-256'], iterations: '16384', dataDir: directory }, sources({ TRIBUTARY_USER_PASSWORD: 'pw' }));
    const listed = capture();
    await listUsersCommand(listed.io, { dataDir: directory });
    expect(listed.out()).toBe(
      'user              mechanisms\n' +
        'CN=client,O=acme  SCRAM-SHA-256 (4096 iterations)\n' +
        'zoe               SCRAM-SHA-256 (16384 iterations), SCRAM-SHA-512 (16384 iterations)\n',
    );
    await removeUserCommand(io, 'zoe', { mechanism: 'SCRAM-SHA-256', dataDir: directory });
    await removeUserCommand(io, 'CN=client,O=acme', { dataDir: directory });
    expect(out()).toContain('removed SCRAM-SHA-256 credential of user zoe\nremoved user CN=client,O=acme\n');
    expect(await failure(() => removeUserCommand(io, 'CN=client,O=acme', { dataDir: directory }))).toMatch(/^USER_NOT_FOUND: user CN=client,O=acme has no SCRAM credential/);
    const after = capture();
    await listUsersCommand(after.io, { dataDir: directory });
    expect(after.out()).toBe('user  mechanisms\nzoe   SCRAM-SHA-512 (16384 iterations)\n');
  });

  it('explains where passwords come from in the help of each subcommand', async () => {
    for (const sub of ['add', 'remove', 'list']) {
      const { io, out } = capture();
      const program = buildProgram(io);
      const override = (command: Command): void => {
        command.exitOverride();
        for (const child of command.commands) override(child);
      };
      override(program);
      const error = await program.parseAsync(['users', sub, '--help'], { from: 'user' }).catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(CommanderError);
      expect(out()).toContain('The password is never a flag.');
      expect(out()).toContain('--data-dir DIR');
      expect(out()).not.toMatch(/--password <password>/);
    }
  });
});
