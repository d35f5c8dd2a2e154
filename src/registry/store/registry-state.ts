/**
 * The schema registry's state: subjects, versions, global ids and compatibility settings, kept in
 * a coordination store (layout.ts) so that any number of stateless registry instances can share
 * one ZooKeeper, or one instance can keep it in a local file (MemoryCoordination with a file).
 *
 * Every write is one coordination transaction guarded by expectedVersion checks; a writer that
 * loses a race re-reads and tries again (bounded). That keeps the invariants without a leader:
 * - an id is allocated by advancing /schemas/next-id in the same transaction that creates
 *   /schemas/ids/<id> and /schemas/fingerprints/<fp>, so no id is used twice, none is lost to a
 *   failed write, and one schema (by fingerprint) never gets two ids;
 * - ids and fingerprints are never deleted, so an id is readable forever and never reused;
 * - a subject's versions live in one node rewritten with expectedVersion, so concurrent changes
 *   to a subject are serialized and compatibility is always checked against what gets replaced.
 * A request that fails (bad input, incompatibility, a lost race after the last attempt) writes
 * nothing. Schemas by id are immutable, so cached without expiry, within a memory bound
 * (schema-cache.ts); subjects and configs are read fresh, since other instances change them.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { TributaryError } from '../../common/errors.js';
import { createLogger, type Logger } from '../../common/logger.js';
import { hasCode, MAX_DATA_BYTES, type CoordinationStore, type TransactionOp } from '../../coordination/store.js';
import { parseAvroSchema, type ParsedSchema } from '../avro-schema.js';
import {
  checkCompatibility,
  describeIncompatibility,
  isCompatibilityLevel,
  type CompatibilityLevel,
  type Incompatibility,
} from '../compatibility.js';
import { registryError, schemaIdNotFound, subjectNotFound, versionNotFound } from '../errors.js';
import { SchemaCache, type SchemaCacheLimits, type SchemaCacheUsage } from './schema-cache.js';
import {
  decodeConfig,
  decodeFingerprintId,
  decodeNextId,
  decodeStoredSchema,
  decodeSubjectNode,
  encodeConfig,
  encodeFingerprintId,
  encodeNextId,
  encodeStoredSchema,
  encodeSubjectNode,
  fingerprintPath,
  GLOBAL_CONFIG_PATH,
  idPath,
  IDS_PATH,
  LAYOUT_PATHS,
  NEXT_ID_PATH,
  subjectConfigPath,
  subjectPath,
  SUBJECTS_PATH,
  type StoredSchema,
  type SubjectNode,
  type VersionEntry,
} from './layout.js';

export type { StoredSchema, VersionEntry } from './layout.js';

export const DEFAULT_COMPATIBILITY: CompatibilityLevel = 'BACKWARD';

/** A version number (1 … 2^31-1) or the latest version. */
export type VersionSpec = number | 'latest';

export interface SchemaRequest {
  /** The schema as JSON text. */
  readonly schema: string;
  /** AVRO when absent; other types are refused with SCHEMA_TYPE_UNSUPPORTED. */
  readonly schemaType?: string;
  /** When given, must equal the version a new registration would get (Confluent's check). */
  readonly version?: number;
}

export interface Registration {
  readonly id: number;
  readonly version: number;
  /** False when the subject already had this schema as a live version (nothing was written). */
  readonly created: boolean;
}

export interface SubjectVersion {
  readonly subject: string;
  readonly version: number;
  readonly id: number;
  readonly schema: string;
  readonly schemaType: string;
  readonly deleted: boolean;
}

export interface RegistryStateOptions extends SchemaCacheLimits {
  readonly logger?: Logger;
  /** Attempts of one write before giving up on a contended subject or id counter. Default 40. */
  readonly maxAttempts?: number;
}

/** A write attempt lost a race: re-read and try again. */
const CONFLICT_CODES = ['BAD_VERSION', 'NODE_EXISTS'] as const;
/** The outcome of the write is unknown; only idempotent writes may re-read and go again. */
const UNKNOWN_OUTCOME_CODES = ['CONNECTION_LOSS', 'TIMEOUT', 'SESSION_EXPIRED', 'ZOOKEEPER_UNREACHABLE'] as const;

const RESERVED_SUBJECTS = new Set(['__GLOBAL', '__EMPTY']);

export class RegistryState {
  private readonly cache: SchemaCache;
  private readonly fingerprintIds = new Map<string, number>();
  /** This instance's writes run one at a time; other instances are kept out by the CAS checks. */
  private writeQueue: Promise<unknown> = Promise.resolve();
  private readonly logger: Logger;
  private readonly maxAttempts: number;

  private constructor(
    private readonly store: CoordinationStore,
    options: RegistryStateOptions,
  ) {
    this.logger = options.logger ?? createLogger({ name: 'registry-state', level: 'warn' });
    this.maxAttempts = options.maxAttempts ?? 40;
    this.cache = new SchemaCache(options);
  }

  /** Creates the layout's parent nodes and the id counter if they are missing. */
  static async open(store: CoordinationStore, options: RegistryStateOptions = {}): Promise<RegistryState> {
    for (const path of LAYOUT_PATHS) await store.ensurePath(path);
    if ((await store.get(NEXT_ID_PATH)) === undefined) {
      // Normally only at the very first start. Should the counter ever be lost, resuming above
      // the highest stored id keeps ids unique.
      const ids = (await store.children(IDS_PATH)) ?? [];
      const highest = ids.map(Number).filter(Number.isSafeInteger).reduce((a, b) => Math.max(a, b), 0);
      try {
        await store.create(NEXT_ID_PATH, encodeNextId(highest + 1), 'persistent');
      } catch (error) {
        if (!hasCode(error, 'NODE_EXISTS')) throw error; // another instance created it first
      }
    }
    return new RegistryState(store, options);
  }

  // ---- schemas by id -------------------------------------------------------------------------

  async schemaById(id: number): Promise<StoredSchema> {
    if (!Number.isSafeInteger(id) || id < 1) throw schemaIdNotFound(id);
    const cached = this.cache.storedSchema(id);
    if (cached !== undefined) return cached;
    const path = idPath(id);
    const node = await this.store.get(path);
    if (node === undefined) throw schemaIdNotFound(id);
    const stored = decodeStoredSchema(path, id, node.data);
    this.cache.keepStoredSchema(id, stored);
    return stored;
  }

  /** What the schema caches hold now (entries and estimated heap bytes). */
  cacheUsage(): SchemaCacheUsage {
    return this.cache.usage();
  }

  /** The highest id allocated so far (0 before the first registration). */
  async maxId(): Promise<number> {
    const node = await this.store.get(NEXT_ID_PATH);
    return node === undefined ? 0 : decodeNextId(NEXT_ID_PATH, node.data) - 1;
  }

  /** The subjects with a version (live, or any with `includeDeleted`) of schema `id`. */
  async subjectsOfId(id: number, includeDeleted = false): Promise<string[]> {
    return [...new Set((await this.versionsOfId(id, includeDeleted)).map(({ subject }) => subject))];
  }

  async versionsOfId(id: number, includeDeleted = false): Promise<{ subject: string; version: number }[]> {
    await this.schemaById(id);
    const found: { subject: string; version: number }[] = [];
    for (const node of await this.allSubjectNodes()) {
      for (const entry of node.versions) {
        if (entry.id === id && (includeDeleted || !entry.deleted)) found.push({ subject: node.subject, version: entry.version });
      }
    }
    return found;
  }

  // ---- subjects and versions -----------------------------------------------------------------

  /** Subjects with at least one live version (any version with `includeDeleted`), sorted. */
  async subjects(includeDeleted = false): Promise<string[]> {
    return (await this.allSubjectNodes())
      .filter((node) => visible(node.versions, includeDeleted).length > 0)
      .map((node) => node.subject)
      .sort();
  }

  /** The subject's version numbers, ascending. SUBJECT_NOT_FOUND when none is visible. */
  async versions(subject: string, includeDeleted = false): Promise<number[]> {
    return (await this.visibleVersions(subject, includeDeleted)).map((entry) => entry.version);
  }

  async version(subject: string, spec: VersionSpec, includeDeleted = false): Promise<SubjectVersion> {
    const entries = await this.visibleVersions(subject, includeDeleted);
    const entry = spec === 'latest' ? entries.at(-1) : entries.find((candidate) => candidate.version === spec);
    if (entry === undefined) throw versionNotFound(subject, spec);
    return this.subjectVersion(subject, entry);
  }

  /** The version of `subject` that holds this schema (same fingerprint). */
  async lookup(subject: string, request: SchemaRequest, includeDeleted = false): Promise<SubjectVersion> {
    const candidate = parseRequest(request);
    const entries = await this.visibleVersions(subject, includeDeleted);
    const id = await this.idOfFingerprint(candidate.fingerprint);
    const matches = entries.filter((entry) => entry.id === id);
    const match = matches.find((entry) => !entry.deleted) ?? matches.at(-1);
    if (match === undefined) throw registryError('SCHEMA_NOT_FOUND', 'Schema not found', { details: { subject } });
    return this.subjectVersion(subject, match);
  }

  // ---- registration --------------------------------------------------------------------------

  /**
   * Registers a schema under a subject: the existing id and version when the subject already has
   * it live; else, if compatible with the subject's live versions at its level, a new version
   * holding the schema's id (the one it has anywhere, or a new one). SCHEMA_INCOMPATIBLE lists
   * every violation.
   */
  async register(subject: string, request: SchemaRequest): Promise<Registration> {
    validateSubject(subject);
    const candidate = parseRequest(request);
    const stored = encodeStoredSchema({ schema: candidate.text, schemaType: 'AVRO', fingerprint: candidate.fingerprint });
    if (stored.length > MAX_DATA_BYTES) {
      throw registryError(
        'SCHEMA_TOO_LARGE',
        `the schema is ${candidate.text.length} characters when minified; this registry stores schemas up to about ${MAX_DATA_BYTES} bytes. Split it or trim its docs`,
      );
    }
    return this.exclusive(() =>
      this.withRetries(`register a schema under subject '${subject}'`, true, async () => {
        const current = await this.readSubject(subject);
        const entries = current?.node.versions ?? [];
        const knownId = await this.idOfFingerprint(candidate.fingerprint);
        const existing = entries.find((entry) => !entry.deleted && entry.id === knownId);
        if (knownId !== undefined && existing !== undefined) return { id: knownId, version: existing.version, created: false };

        const version = (entries.at(-1)?.version ?? 0) + 1;
        if (request.version !== undefined && request.version !== version) {
          throw registryError(
            'SCHEMA_INVALID',
            `Version is not one more than previous version: the request asks for version ${request.version}, the next version of subject '${subject}' is ${version}. Leave "version" out to take the next one`,
            { details: { subject, requested: request.version, next: version } },
          );
        }
        const problems = await this.incompatibilities(subject, candidate, entries.filter((entry) => !entry.deleted));
        if (problems.incompatibilities.length > 0) throw incompatible(subject, problems.level, problems.incompatibilities);

        const ops: TransactionOp[] = [];
        let id = knownId;
        if (id === undefined) {
          const counter = await this.store.get(NEXT_ID_PATH);
          if (counter === undefined) throw registryError('STORE_ERROR', `${NEXT_ID_PATH} is missing; restart the registry to recreate it`);
          id = decodeNextId(NEXT_ID_PATH, counter.data);
          ops.push(
            { op: 'set', path: NEXT_ID_PATH, data: encodeNextId(id + 1), expectedVersion: counter.version },
            { op: 'create', path: idPath(id), data: stored },
            { op: 'create', path: fingerprintPath(candidate.fingerprint), data: encodeFingerprintId(id) },
          );
        }
        const node: SubjectNode = { subject, versions: [...entries, { version, id, deleted: false }] };
        ops.push(this.subjectWrite(subject, node, current?.version));
        await this.store.transaction(ops);
        if (knownId === undefined) this.fingerprintIds.set(candidate.fingerprint, id);
        this.logger.info({ subject, id, version }, 'schema registered');
        return { id, version, created: true };
      }),
    );
  }

  /**
   * What stands between a candidate and a subject: against `'all'` the check registration makes
   * (the live versions, at the subject's level); against one version (or the latest live one)
   * only that version, in the level's direction. A subject without live versions and 'latest'
   * has nothing against it; a missing numbered version is VERSION_NOT_FOUND.
   */
  async testCompatibility(subject: string, request: SchemaRequest, against: VersionSpec | 'all'): Promise<Incompatibility[]> {
    validateSubject(subject);
    const candidate = parseRequest(request);
    const live = ((await this.readSubject(subject))?.node.versions ?? []).filter((entry) => !entry.deleted);
    let targets: VersionEntry[];
    if (against === 'all') targets = live;
    else if (against === 'latest') targets = live.slice(-1);
    else {
      const entry = live.find((candidateEntry) => candidateEntry.version === against);
      if (entry === undefined) throw versionNotFound(subject, against);
      targets = [entry];
    }
    return (await this.incompatibilities(subject, candidate, targets)).incompatibilities;
  }

  // ---- deletion ------------------------------------------------------------------------------

  /**
   * Soft delete marks every live version deleted (SUBJECT_SOFT_DELETED when none is left);
   * permanent delete, allowed only after a soft one (SUBJECT_NOT_SOFT_DELETED), forgets the
   * versions and the subject's config. Returns the versions affected. Ids stay readable.
   */
  async deleteSubject(subject: string, permanent = false): Promise<number[]> {
    validateSubject(subject);
    return this.exclusive(() =>
      this.withRetries(`delete subject '${subject}'`, false, async () => {
        const current = await this.readSubject(subject);
        if (current === undefined || current.node.versions.length === 0) throw subjectNotFound(subject);
        const { node, version } = current;
        const live = node.versions.filter((entry) => !entry.deleted);
        if (!permanent) {
          if (live.length === 0) {
            throw registryError('SUBJECT_SOFT_DELETED', `Subject '${subject}' was soft deleted.Set permanent=true to delete permanently`, { details: { subject } });
          }
          const versions = node.versions.map((entry) => ({ ...entry, deleted: true }));
          await this.store.transaction([this.subjectWrite(subject, { subject, versions }, version)]);
          return live.map((entry) => entry.version);
        }
        if (live.length > 0) {
          throw registryError('SUBJECT_NOT_SOFT_DELETED', `Subject '${subject}' was not deleted first before being permanently deleted`, { details: { subject } });
        }
        const ops: TransactionOp[] = [this.subjectWrite(subject, { subject, versions: [] }, version)];
        const config = await this.store.get(subjectConfigPath(subject));
        if (config !== undefined) ops.push({ op: 'delete', path: subjectConfigPath(subject), expectedVersion: config.version });
        await this.store.transaction(ops);
        return node.versions.map((entry) => entry.version);
      }),
    );
  }

  /** As deleteSubject, for one version ('latest' = the highest, deleted or not). Returns it. */
  async deleteVersion(subject: string, spec: VersionSpec, permanent = false): Promise<number> {
    validateSubject(subject);
    return this.exclusive(() =>
      this.withRetries(`delete version ${spec} of subject '${subject}'`, false, async () => {
        const current = await this.readSubject(subject);
        if (current === undefined || current.node.versions.length === 0) throw subjectNotFound(subject);
        const { node, version } = current;
        const entry = spec === 'latest' ? node.versions.at(-1) : node.versions.find((candidate) => candidate.version === spec);
        if (entry === undefined) throw versionNotFound(subject, spec);
        let versions: VersionEntry[];
        if (!permanent) {
          if (entry.deleted) {
            throw registryError(
              'VERSION_SOFT_DELETED',
              `Subject '${subject}' Version ${entry.version} was soft deleted.Set permanent=true to delete permanently`,
              { details: { subject, version: entry.version } },
            );
          }
          versions = node.versions.map((other) => (other === entry ? { ...other, deleted: true } : other));
        } else {
          if (!entry.deleted) {
            throw registryError(
              'VERSION_NOT_SOFT_DELETED',
              `Subject '${subject}' Version ${entry.version} was not deleted first before being permanently deleted`,
              { details: { subject, version: entry.version } },
            );
          }
          versions = node.versions.filter((other) => other !== entry);
        }
        await this.store.transaction([this.subjectWrite(subject, { subject, versions }, version)]);
        return entry.version;
      }),
    );
  }

  // ---- compatibility configuration -----------------------------------------------------------

  async globalCompatibility(): Promise<CompatibilityLevel> {
    return (await this.readConfig(GLOBAL_CONFIG_PATH))?.level ?? DEFAULT_COMPATIBILITY;
  }

  async setGlobalCompatibility(level: CompatibilityLevel): Promise<void> {
    await this.exclusive(() => this.upsert(GLOBAL_CONFIG_PATH, encodeConfig(level)));
  }

  /** Back to the default; returns the level in force before. */
  async deleteGlobalCompatibility(): Promise<CompatibilityLevel> {
    return this.exclusive(async () => {
      const current = await this.readConfig(GLOBAL_CONFIG_PATH);
      if (current !== undefined) await this.deleteIfAt(GLOBAL_CONFIG_PATH, current.version);
      return current?.level ?? DEFAULT_COMPATIBILITY;
    });
  }

  /** The subject's own level, or undefined when it follows the global one. */
  async subjectCompatibility(subject: string): Promise<CompatibilityLevel | undefined> {
    validateSubject(subject);
    return (await this.readConfig(subjectConfigPath(subject)))?.level;
  }

  /** Allowed before the subject has any schema (a client may configure first). */
  async setSubjectCompatibility(subject: string, level: CompatibilityLevel): Promise<void> {
    validateSubject(subject);
    await this.exclusive(() => this.upsert(subjectConfigPath(subject), encodeConfig(level, subject)));
  }

  /** Removes the subject's own level (SUBJECT_CONFIG_NOT_FOUND when it has none); returns it. */
  async deleteSubjectCompatibility(subject: string): Promise<CompatibilityLevel> {
    validateSubject(subject);
    return this.exclusive(async () => {
      const path = subjectConfigPath(subject);
      const current = await this.readConfig(path);
      if (current === undefined || !(await this.deleteIfAt(path, current.version))) throw subjectConfigNotFound(subject);
      return current.level;
    });
  }

  async effectiveCompatibility(subject: string): Promise<CompatibilityLevel> {
    return (await this.subjectCompatibility(subject)) ?? (await this.globalCompatibility());
  }

  // ---- internals -----------------------------------------------------------------------------

  private async incompatibilities(
    subject: string,
    candidate: ParsedSchema,
    against: readonly VersionEntry[],
  ): Promise<{ level: CompatibilityLevel; incompatibilities: Incompatibility[] }> {
    const level = await this.effectiveCompatibility(subject);
    if (level === 'NONE' || against.length === 0) return { level, incompatibilities: [] };
    const existing = await Promise.all(against.map(async (entry) => ({ version: entry.version, schema: await this.parsedSchema(entry.id) })));
    return { level, incompatibilities: checkCompatibility(level, candidate, existing) };
  }

  private async parsedSchema(id: number): Promise<ParsedSchema> {
    const cached = this.cache.parsedSchema(id);
    if (cached !== undefined) return cached;
    const stored = await this.schemaById(id);
    let parsed: ParsedSchema;
    try {
      parsed = parseAvroSchema(stored.schema, stored.schemaType);
    } catch (error) {
      throw registryError('STORE_ERROR', `stored schema ${id} no longer parses; it cannot be compared with a new schema`, { cause: error, details: { id } });
    }
    this.cache.keepParsedSchema(id, parsed, stored.schema.length);
    return parsed;
  }

  private async idOfFingerprint(fingerprint: string): Promise<number | undefined> {
    const cached = this.fingerprintIds.get(fingerprint);
    if (cached !== undefined) return cached;
    const path = fingerprintPath(fingerprint);
    const node = await this.store.get(path);
    if (node === undefined) return undefined;
    const id = decodeFingerprintId(path, node.data);
    this.fingerprintIds.set(fingerprint, id);
    return id;
  }

  private async readSubject(subject: string): Promise<{ node: SubjectNode; version: number } | undefined> {
    const path = subjectPath(subject);
    const stored = await this.store.get(path);
    return stored === undefined ? undefined : { node: decodeSubjectNode(path, stored.data), version: stored.version };
  }

  private async visibleVersions(subject: string, includeDeleted: boolean): Promise<VersionEntry[]> {
    validateSubject(subject);
    const entries = visible((await this.readSubject(subject))?.node.versions ?? [], includeDeleted);
    if (entries.length === 0) throw subjectNotFound(subject);
    return entries;
  }

  private async allSubjectNodes(): Promise<SubjectNode[]> {
    const names = (await this.store.children(SUBJECTS_PATH)) ?? [];
    const nodes = await Promise.all(
      names.map(async (name) => {
        const path = `${SUBJECTS_PATH}/${name}`;
        const stored = await this.store.get(path);
        return stored === undefined ? undefined : decodeSubjectNode(path, stored.data);
      }),
    );
    return nodes.filter((node) => node !== undefined);
  }

  private async subjectVersion(subject: string, entry: VersionEntry): Promise<SubjectVersion> {
    const stored = await this.schemaById(entry.id);
    return { subject, version: entry.version, id: entry.id, schema: stored.schema, schemaType: stored.schemaType, deleted: entry.deleted };
  }

  /** Creates the subject node, or replaces it if still at the version read. */
  private subjectWrite(subject: string, node: SubjectNode, readVersion: number | undefined): TransactionOp {
    const data = encodeSubjectNode(node);
    return readVersion === undefined
      ? { op: 'create', path: subjectPath(subject), data }
      : { op: 'set', path: subjectPath(subject), data, expectedVersion: readVersion };
  }

  private async readConfig(path: string): Promise<{ level: CompatibilityLevel; version: number } | undefined> {
    const stored = await this.store.get(path);
    if (stored === undefined) return undefined;
    const level = decodeConfig(path, stored.data);
    if (!isCompatibilityLevel(level)) {
      throw registryError('STORE_ERROR', `the registry node ${path} holds the unknown compatibility level ${JSON.stringify(level)}; set a valid level`);
    }
    return { level, version: stored.version };
  }

  /** Last writer wins, as for Confluent's config records. */
  private async upsert(path: string, data: Buffer): Promise<void> {
    await this.withRetries(`write ${path}`, true, async () => {
      if (!(await this.store.exists(path))) return void (await this.store.create(path, data, 'persistent'));
      try {
        await this.store.set(path, data);
      } catch (error) {
        // Deleted between the two calls: go round again and create it.
        if (hasCode(error, 'NO_NODE')) throw new TributaryError({ code: 'BAD_VERSION', message: `${path} vanished while being set`, cause: error });
        throw error;
      }
    });
  }

  /** Deletes the node if it is still at `version`; false if someone else deleted it first. */
  private async deleteIfAt(path: string, version: number): Promise<boolean> {
    try {
      await this.store.delete(path, version);
      return true;
    } catch (error) {
      if (hasCode(error, 'NO_NODE')) return false;
      throw error;
    }
  }

  private exclusive<T>(write: () => Promise<T>): Promise<T> {
    const result = this.writeQueue.then(write, write);
    this.writeQueue = result.catch(() => undefined);
    return result;
  }

  /**
   * Runs `attempt` until it does not lose a race (BAD_VERSION, NODE_EXISTS), at most maxAttempts
   * times, with a short random pause growing per attempt. With `idempotent`, a write whose
   * outcome is unknown (connection loss, timeout) is retried too: the attempt re-reads first.
   */
  private async withRetries<T>(what: string, idempotent: boolean, attempt: () => Promise<T>): Promise<T> {
    let last: unknown;
    for (let round = 1; round <= this.maxAttempts; round += 1) {
      try {
        return await attempt();
      } catch (error) {
        const conflict = CONFLICT_CODES.some((code) => hasCode(error, code));
        const unknownOutcome = idempotent && UNKNOWN_OUTCOME_CODES.some((code) => hasCode(error, code));
        if (!conflict && !unknownOutcome) throw error;
        last = error;
        this.logger.debug({ err: error, what, round }, 'registry write lost a race or its connection; retrying');
        await sleep(Math.random() * Math.min(250, 2 ** round));
      }
    }
    throw registryError(
      hasCode(last, 'TIMEOUT') || hasCode(last, 'CONNECTION_LOSS') ? 'STORE_TIMEOUT' : 'STORE_ERROR',
      `could not ${what} in ${this.maxAttempts} attempts: other writers kept changing the same nodes or the store kept failing; nothing was written by the last attempt — retry later`,
      { cause: last, retriable: true },
    );
  }
}

function visible(entries: readonly VersionEntry[], includeDeleted: boolean): VersionEntry[] {
  return entries.filter((entry) => includeDeleted || !entry.deleted);
}

function parseRequest(request: SchemaRequest): ParsedSchema {
  return parseAvroSchema(request.schema, request.schemaType);
}

function incompatible(subject: string, level: CompatibilityLevel, problems: readonly Incompatibility[]): TributaryError {
  return registryError(
    'SCHEMA_INCOMPATIBLE',
    `Schema being registered is incompatible with an earlier schema for subject "${subject}", details: [${problems.map(describeIncompatibility).join('; ')}] (compatibility level ${level}; change the schema, or the subject's level with PUT /config/{subject})`,
    { details: { subject, level, incompatibilities: problems } },
  );
}

function subjectConfigNotFound(subject: string): TributaryError {
  return registryError('SUBJECT_CONFIG_NOT_FOUND', `Subject '${subject}' does not have subject-level compatibility configured`, { details: { subject } });
}

/**
 * Confluent refuses control characters and two reserved names; lone UTF-16 surrogates are refused
 * too, since they cannot be stored as UTF-8 and would merge distinct names.
 */
export function validateSubject(subject: string): void {
  const fail = (why: string): never => {
    throw registryError('SUBJECT_INVALID', `The specified subject '${subject}' is not valid: ${why}`, { details: { subject } });
  };
  if (typeof subject !== 'string' || subject.length === 0) fail('it is empty; name the subject, e.g. orders-value');
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f-\u009f]/.test(subject)) fail('it contains a control character; use printable characters only');
  if (/\p{Cs}/u.test(subject)) fail('it contains an unpaired UTF-16 surrogate; send well-formed Unicode');
  if (RESERVED_SUBJECTS.has(subject)) fail(`${subject} is reserved; choose another name`);
}
