/** The registry client of a load: its URL and `registryConfig` (relative paths from the load file's folder). */
import { dirname } from 'node:path';
import type { Logger } from '../common/logger.js';
import { RegistryClient } from '../registry/client.js';
import { registryClientSecurity, type Environment } from '../registry/client-config.js';
import type { LoadDefinition } from './load-file.js';

/** `env` is the process environment of the composition root (TRIBUTARY_REGISTRY_*), or {} for none. */
export function loadRegistryClient(load: LoadDefinition, logger: Logger, env: Environment): RegistryClient {
  return new RegistryClient({ url: load.registry, logger, ...registryClientSecurity(load.registryConfig ?? {}, env, dirname(load.file)) });
}
