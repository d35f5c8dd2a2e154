/** `tributary registry start`: one schema registry instance (Confluent-compatible REST). */
import { notImplemented, type CommandIo } from '../not-implemented.js';

export interface RegistryStartOptions {
  readonly listen: string;
  readonly zookeeper?: string;
  readonly dataDir?: string;
  readonly logLevel: string;
}

export function startRegistry(io: CommandIo, _options: RegistryStartOptions): Promise<void> {
  return Promise.resolve(notImplemented(io, 'registry start', 7));
}
