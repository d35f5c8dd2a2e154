/**
 * `tributary schemas register|get|list|check|config`: a registry's schemas from the terminal.
 * Results go to stdout (a schema exactly as JSON, so `get > x.avsc` works); notes to stderr.
 * Failures are TributaryErrors: main.ts prints them and exits 1; `check` exits 1 when incompatible.
 */
import { readFile } from 'node:fs/promises';
import { TributaryError } from '../../common/errors.js';
import { RegistryClient, type VersionSpec } from '../../registry/client.js';
import { COMPATIBILITY_LEVELS, isCompatibilityLevel } from '../../registry/compatibility.js';
import type { CommandIo } from '../not-implemented.js';
import { registryClientOptions } from '../registry-client-options.js';

export interface SchemasRegisterOptions {
  readonly registry: string;
  /** Properties file with the registry's credentials and CA (registry/client-config.ts). */
  readonly commandConfig?: string;
  readonly subject: string;
  readonly file: string;
}
export interface SchemasGetOptions {
  readonly registry: string;
  /** Properties file with the registry's credentials and CA (registry/client-config.ts). */
  readonly commandConfig?: string;
  readonly id?: string;
  readonly subject?: string;
  readonly version?: string;
}
export interface SchemasListOptions {
  readonly registry: string;
  /** Properties file with the registry's credentials and CA (registry/client-config.ts). */
  readonly commandConfig?: string;
}
export interface SchemasCheckOptions {
  readonly registry: string;
  /** Properties file with the registry's credentials and CA (registry/client-config.ts). */
  readonly commandConfig?: string;
  readonly subject: string;
  readonly file: string;
}
export interface SchemasConfigOptions {
  readonly registry: string;
  /** Properties file with the registry's credentials and CA (registry/client-config.ts). */
  readonly commandConfig?: string;
  readonly subject?: string;
  readonly level?: string;
}

export async function registerSchema(io: CommandIo, options: SchemasRegisterOptions): Promise<void> {
  const client = new RegistryClient(registryClientOptions(options.registry, options.commandConfig));
  const schema = await readSchemaFile(options.file);
  const registered = await client.register(options.subject, schema);
  // Older registries answer only the id; the version then comes from a lookup.
  const version = registered.version ?? (await client.lookup(options.subject, schema)).version;
  io.writeOut(`schema id ${registered.id} is version ${version} of subject ${options.subject}\n`);
}

export async function getSchema(io: CommandIo, options: SchemasGetOptions): Promise<void> {
  const client = new RegistryClient(registryClientOptions(options.registry, options.commandConfig));
  if ((options.id === undefined) === (options.subject === undefined)) {
    usage('schemas get needs either --id N or --subject S [--version V], not both and not neither');
  }
  if (options.id !== undefined) {
    if (options.version !== undefined) usage('--version goes with --subject; a schema id names one schema already');
    const id = parsePositiveInteger('--id', options.id);
    const found = await client.schemaById(id);
    io.writeErr(`schema id ${id}${found.schemaType === undefined ? '' : ` (${found.schemaType})`}\n`);
    io.writeOut(`${pretty(found.schema)}\n`);
    return;
  }
  const subject = options.subject!;
  const version = parseVersion(options.version ?? 'latest');
  const found = await client.version(subject, version);
  io.writeErr(`subject ${found.subject} version ${found.version}: schema id ${found.id}\n`);
  io.writeOut(`${pretty(found.schema)}\n`);
}

export async function listSchemas(io: CommandIo, options: SchemasListOptions): Promise<void> {
  const client = new RegistryClient(registryClientOptions(options.registry, options.commandConfig));
  const subjects = [...(await client.subjects())].sort();
  if (subjects.length === 0) {
    io.writeErr('no subjects registered\n');
    return;
  }
  const rows = await Promise.all(
    subjects.map(async (subject) => {
      const [versions, latest] = await Promise.all([client.versions(subject), client.version(subject, 'latest')]);
      return { subject, versions: versions.join(','), latestId: String(latest.id) };
    }),
  );
  const width = Math.max('subject'.length, ...rows.map((row) => row.subject.length)) + 2;
  const versionsWidth = Math.max('versions'.length, ...rows.map((row) => row.versions.length)) + 2;
  io.writeOut(`${'subject'.padEnd(width)}${'versions'.padEnd(versionsWidth)}latest id\n`);
  for (const row of rows) io.writeOut(`${row.subject.padEnd(width)}${row.versions.padEnd(versionsWidth)}${row.latestId}\n`);
}

export async function checkSchema(io: CommandIo, options: SchemasCheckOptions): Promise<void> {
  const client = new RegistryClient(registryClientOptions(options.registry, options.commandConfig));
  const schema = await readSchemaFile(options.file);
  // The versions registration would check: the latest, or all of them under a transitive level.
  const result = await client.testCompatibility(options.subject, schema, 'all', true);
  if (result.isCompatible) {
    io.writeOut(`compatible: ${options.file} can be registered under subject ${options.subject}\n`);
    return;
  }
  io.writeOut(`incompatible: ${options.file} cannot be registered under subject ${options.subject}\n`);
  for (const message of result.messages) io.writeOut(`  - ${message}\n`);
  throw new TributaryError({
    code: 'REGISTRY_INCOMPATIBLE_SCHEMA',
    message:
      `${options.file} is not compatible with subject ${options.subject} ` +
      `(${result.messages.length} problem${result.messages.length === 1 ? '' : 's'} listed above); registering it would be refused`,
    details: { subject: options.subject, file: options.file, messages: result.messages },
  });
}

export async function configureSchemas(io: CommandIo, options: SchemasConfigOptions): Promise<void> {
  const client = new RegistryClient(registryClientOptions(options.registry, options.commandConfig));
  const scope = options.subject === undefined ? 'global' : `subject ${options.subject}`;
  if (options.level !== undefined) {
    const level = options.level.trim().toUpperCase();
    if (!isCompatibilityLevel(level)) {
      usage(`--level ${options.level} is not a compatibility level; use one of ${COMPATIBILITY_LEVELS.join(', ')}`);
    }
    const set = await client.setConfig(level, options.subject);
    io.writeOut(`${scope}: ${set.toUpperCase()}\n`);
    return;
  }
  if (options.subject === undefined) {
    io.writeOut(`global: ${(await client.getConfig()).toUpperCase()}\n`);
    return;
  }
  try {
    io.writeOut(`${scope}: ${(await client.getConfig(options.subject)).toUpperCase()}\n`);
  } catch (error) {
    if (!(error instanceof TributaryError) || error.code !== 'REGISTRY_SUBJECT_CONFIG_NOT_FOUND') throw error;
    io.writeOut(`${scope}: ${(await client.getConfig()).toUpperCase()} (no level of its own; the global level applies)\n`);
  }
}

async function readSchemaFile(file: string): Promise<string> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    const reason = error instanceof Error && 'code' in error && error.code === 'ENOENT' ? 'no such file' : error instanceof Error ? error.message : String(error);
    throw new TributaryError({ code: 'COMMAND_FAILED', message: `cannot read schema file ${file}: ${reason}`, cause: error, details: { file } });
  }
  try {
    JSON.parse(text);
  } catch (error) {
    throw new TributaryError({
      code: 'COMMAND_FAILED',
      message: `${file} is not JSON (${error instanceof Error ? error.message : String(error)}); an .avsc file holds one Avro schema as JSON`,
      cause: error,
      details: { file },
    });
  }
  return text;
}

function parsePositiveInteger(flag: string, value: string): number {
  const number = /^\d+$/.test(value.trim()) ? Number(value) : Number.NaN;
  if (!Number.isSafeInteger(number) || number < 1) usage(`${flag} takes a positive integer, not "${value}"`);
  return number;
}

function parseVersion(value: string): VersionSpec {
  return value.trim().toLowerCase() === 'latest' ? 'latest' : parsePositiveInteger('--version', value);
}

/** Pretty JSON when the registry's text parses; the text as it is otherwise. */
function pretty(schema: string): string {
  try {
    return JSON.stringify(JSON.parse(schema), null, 2);
  } catch {
    return schema;
  }
}

function usage(message: string): never {
  throw new TributaryError({ code: 'USAGE', message });
}
