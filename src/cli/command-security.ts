/**
 * `--command-config FILE` of the commands that reach brokers (Kafka tools' flag): the client
 * security properties in it, with the password variable read from this process's environment.
 */
import { readCommandConfig } from '../client/command-config.js';
import type { ClientSecurity } from '../client/security-config.js';

export const COMMAND_CONFIG_HELP =
  'client properties file (Kafka tools\' --command-config): security.protocol, sasl.mechanism, sasl.username, sasl.password.file ' +
  '(or the environment variable TRIBUTARY_SASL_PASSWORD), ssl.truststore.location, ssl.keystore.location, ssl.endpoint.identification.algorithm';

/** The security of `--command-config`, or undefined (PLAINTEXT) without the flag. */
export function commandSecurity(path: string | undefined): ClientSecurity | undefined {
  return path === undefined ? undefined : readCommandConfig(path, process.env);
}
