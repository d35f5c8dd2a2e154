/**
 * `--command-config FILE`, the Kafka tools' flag: a Java-properties file of client settings
 * (`key=value` or `key: value` lines; `#` and `!` start comments). The security properties in it
 * (security-config.ts) secure the command's broker connections; other client settings a Kafka
 * tool would take there are ignored, so one file serves both.
 */
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { TributaryError } from '../common/errors.js';
import { parseClientSecurity, type ClientSecurity } from './security-config.js';

/** The ClientSecurity of a command-config file; relative paths in it are taken from its folder. */
export function readCommandConfig(path: string, env: Readonly<Record<string, string | undefined>>): ClientSecurity {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new TributaryError({
      code: 'CONFIG_INVALID',
      message: `cannot read --command-config ${path}: ${(error as Error).message}`,
      cause: error,
      details: { path },
    });
  }
  return parseClientSecurity(parseClientProperties(text, path), { source: path, baseDirectory: dirname(resolve(path)), env, ignoreOtherKeys: true });
}

/** The properties of a Java-properties text (no line continuations or escapes: client settings do not need them). */
export function parseClientProperties(text: string, source: string): Record<string, string> {
  const properties: Record<string, string> = {};
  text.split(/\r?\n/).forEach((line, index) => {
    const trimmed = line.trim();
    if (trimmed === '' || trimmed.startsWith('#') || trimmed.startsWith('!')) return;
    const separator = trimmed.search(/[=:]/);
    if (separator <= 0) {
      throw new TributaryError({ code: 'CONFIG_INVALID', message: `${source} line ${index + 1}: expected key=value, not "${trimmed.slice(0, 40)}"`, details: { source, line: index + 1 } });
    }
    properties[trimmed.slice(0, separator).trim()] = trimmed.slice(separator + 1).trim();
  });
  return properties;
}
