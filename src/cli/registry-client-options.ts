/**
 * How a command reaches a schema registry: its URL plus the security settings of
 * registry/client-config.ts, from `--command-config FILE` (Java-properties lines, Confluent's
 * names, relative paths taken from the file's folder) and the TRIBUTARY_REGISTRY_* environment.
 */
import { readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { parseProperties } from '../broker/config.js';
import { TributaryError } from '../common/errors.js';
import type { Logger } from '../common/logger.js';
import type { RegistryClientOptions, RegistryClientSecurity } from '../registry/client.js';
import { registryClientSecurity } from '../registry/client-config.js';

/** The security of a registry client from a properties file (optional) and this process's environment. */
export function registrySecurityFrom(commandConfig?: string): RegistryClientSecurity {
  if (commandConfig === undefined) return registryClientSecurity({}, process.env);
  let text: string;
  try {
    text = readFileSync(commandConfig, 'utf8');
  } catch (error) {
    throw new TributaryError({ code: 'CONFIG_INVALID', message: `cannot read --command-config ${commandConfig}: ${(error as Error).message}`, cause: error });
  }
  let properties: Record<string, string>;
  try {
    properties = parseProperties(text, commandConfig);
  } catch (error) {
    throw new TributaryError({ code: 'CONFIG_INVALID', message: (error as Error).message, cause: error });
  }
  return registryClientSecurity(properties, process.env, dirname(commandConfig));
}

export function registryClientOptions(url: string, commandConfig?: string, logger?: Logger): RegistryClientOptions {
  return { url, ...registrySecurityFrom(commandConfig), ...(logger === undefined ? {} : { logger }) };
}
