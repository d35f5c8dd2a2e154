/**
 * `tributary registry user-line NAME --role ROLE`: prints one line of the registry's users file
 * (src/registry/auth/users-file.ts) for NAME, with a scrypt hash of a password read from the
 * environment variable named by --password-env (default TRIBUTARY_REGISTRY_PASSWORD) or, when
 * that is unset, from the first line of stdin. Never from argv, where `ps` would show it.
 *
 *   printf '%s\n' "$PASSWORD" | tributary registry user-line ann --role admin >> registry-users
 */
import { TributaryError } from '../../common/errors.js';
import { REGISTRY_ROLES, userLine, type RegistryRole } from '../../registry/auth/users-file.js';
import { DEFAULT_PASSWORD_ENV } from '../command-constants.js';
import type { CommandIo } from '../not-implemented.js';

export interface RegistryUserLineOptions {
  readonly role: string;
  readonly passwordEnv?: string;
}

export async function printRegistryUserLine(io: CommandIo, name: string, options: RegistryUserLineOptions): Promise<void> {
  if (!(REGISTRY_ROLES as readonly string[]).includes(options.role)) {
    throw new TributaryError({ code: 'CONFIG_INVALID', message: `--role must be one of ${REGISTRY_ROLES.join(', ')}, not "${options.role}"` });
  }
  const fromEnv = process.env[options.passwordEnv ?? DEFAULT_PASSWORD_ENV];
  const password = fromEnv ?? (await firstLineOfStdin(io, options.passwordEnv ?? DEFAULT_PASSWORD_ENV));
  io.writeOut(`${await userLine(name, options.role as RegistryRole, password)}\n`);
}

async function firstLineOfStdin(io: CommandIo, envName: string): Promise<string> {
  if (process.stdin.isTTY) io.writeErr(`password (or set ${envName}), then Enter; it is shown as typed:\n`);
  let text = '';
  for await (const chunk of process.stdin) {
    text += (chunk as Buffer).toString('utf8');
    if (text.includes('\n')) break;
  }
  const line = text.split(/\r?\n/)[0] ?? '';
  if (line === '') throw new TributaryError({ code: 'CONFIG_INVALID', message: `no password: set ${envName} or write it as the first line of stdin` });
  return line;
}
