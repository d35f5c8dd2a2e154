/**
 * `--command-config FILE` of the commands that reach brokers (Kafka tools' flag): the client
 * security properties in it, with the password variable read from this process's environment.
 */
import { readCommandConfig } from '../client/command-config.js';
import type { ClientSecurity } from '../client/security-config.js';

/** The security of `--command-config`, or undefined (PLAINTEXT) without the flag. */
export function commandSecurity(path: string | undefined): ClientSecurity | undefined {
  return path === undefined ? undefined : readCommandConfig(path, process.env);
}
