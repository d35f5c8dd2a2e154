/**
 * Where the registry keeps its state in a coordination store, and the format of every node.
 * All nodes are persistent, all values UTF-8 JSON:
 *
 *   /schemas/next-id                      {"next": <int>}      the next id to allocate; advanced
 *                                                              with expectedVersion (CAS)
 *   /schemas/ids/<id>                     {"schema": <minified schema text>, "schemaType": "AVRO",
 *                                          "fingerprint": <sha256 hex>}         never deleted
 *   /schemas/fingerprints/<sha256 hex>    {"id": <int>}        created if absent: one id per
 *                                                              schema, never deleted
 *   /schemas/subjects/<encoded subject>   {"subject": <name>, "versions": [{"version": <int>,
 *                                          "id": <int>, "deleted": <bool>}, …]} ascending; every
 *                                          change to a subject's versions rewrites this one node
 *                                          with expectedVersion, which serializes them. Never
 *                                          deleted (a permanent delete empties the list), so its
 *                                          ZooKeeper version only grows and a stale CAS can't match.
 *   /schemas/config/global                {"compatibilityLevel": <level>}       absent: BACKWARD
 *   /schemas/config/subjects/<encoded>    {"subject": <name>, "compatibilityLevel": <level>}
 *
 * Subject names may hold any character ZooKeeper refuses in a path segment ('/', control and
 * surrogate characters, a whole "." or ".."), so a segment is the name's UTF-8 bytes with every
 * byte outside [A-Za-z0-9._-] written as %XX (upper-case hex), and a name made only of dots
 * written wholly as %2E. '%' itself is always escaped, so the encoding is one-to-one.
 */
import { schemasPath } from '../../coordination/paths.js';
import { registryError } from '../errors.js';

export const ROOT_PATH = schemasPath();
export const NEXT_ID_PATH = `${ROOT_PATH}/next-id`;
export const IDS_PATH = `${ROOT_PATH}/ids`;
export const FINGERPRINTS_PATH = `${ROOT_PATH}/fingerprints`;
export const SUBJECTS_PATH = `${ROOT_PATH}/subjects`;
export const CONFIG_PATH = `${ROOT_PATH}/config`;
export const GLOBAL_CONFIG_PATH = `${CONFIG_PATH}/global`;
export const SUBJECT_CONFIGS_PATH = `${CONFIG_PATH}/subjects`;

/** The parents every instance ensures at start-up. */
export const LAYOUT_PATHS = [ROOT_PATH, IDS_PATH, FINGERPRINTS_PATH, SUBJECTS_PATH, CONFIG_PATH, SUBJECT_CONFIGS_PATH] as const;

export function idPath(id: number): string {
  return `${IDS_PATH}/${id}`;
}

export function fingerprintPath(fingerprint: string): string {
  if (!/^[0-9a-f]{64}$/.test(fingerprint)) throw new Error(`not a sha256 hex fingerprint: ${fingerprint}`);
  return `${FINGERPRINTS_PATH}/${fingerprint}`;
}

export function subjectPath(subject: string): string {
  return `${SUBJECTS_PATH}/${encodeSubject(subject)}`;
}

export function subjectConfigPath(subject: string): string {
  return `${SUBJECT_CONFIGS_PATH}/${encodeSubject(subject)}`;
}

const KEPT = /^[A-Za-z0-9._-]$/;

export function encodeSubject(subject: string): string {
  if (/^\.+$/.test(subject)) return '%2E'.repeat(subject.length);
  let encoded = '';
  for (const character of subject) {
    if (KEPT.test(character)) {
      encoded += character;
      continue;
    }
    for (const byte of Buffer.from(character, 'utf8')) encoded += `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return encoded;
}

export interface StoredSchema {
  readonly id: number;
  /** The schema text as first registered, minified: what the read endpoints return. */
  readonly schema: string;
  readonly schemaType: string;
  readonly fingerprint: string;
}

export interface VersionEntry {
  readonly version: number;
  readonly id: number;
  readonly deleted: boolean;
}

export interface SubjectNode {
  readonly subject: string;
  readonly versions: readonly VersionEntry[];
}

function json(value: unknown): Buffer {
  return Buffer.from(JSON.stringify(value), 'utf8');
}

/** Corrupt registry data is an operator's problem: say which node and what is wrong with it. */
function corrupt(path: string, what: string): never {
  throw registryError(
    'STORE_ERROR',
    `the registry node ${path} is corrupt (${what}); restore it from a backup — the registry will not guess its contents`,
    { details: { path } },
  );
}

function parseObject(path: string, data: Buffer): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(data.toString('utf8'));
  } catch {
    return corrupt(path, 'not JSON');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return corrupt(path, 'not a JSON object');
  return value as Record<string, unknown>;
}

function positiveInt(path: string, value: unknown, field: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) return corrupt(path, `${field} is not a positive integer`);
  return value;
}

function text(path: string, value: unknown, field: string): string {
  if (typeof value !== 'string') return corrupt(path, `${field} is not a string`);
  return value;
}

export function encodeNextId(next: number): Buffer {
  return json({ next });
}

export function decodeNextId(path: string, data: Buffer): number {
  return positiveInt(path, parseObject(path, data)['next'], 'next');
}

export function encodeStoredSchema(schema: Omit<StoredSchema, 'id'>): Buffer {
  return json({ schema: schema.schema, schemaType: schema.schemaType, fingerprint: schema.fingerprint });
}

export function decodeStoredSchema(path: string, id: number, data: Buffer): StoredSchema {
  const value = parseObject(path, data);
  return {
    id,
    schema: text(path, value['schema'], 'schema'),
    schemaType: text(path, value['schemaType'], 'schemaType'),
    fingerprint: text(path, value['fingerprint'], 'fingerprint'),
  };
}

export function encodeFingerprintId(id: number): Buffer {
  return json({ id });
}

export function decodeFingerprintId(path: string, data: Buffer): number {
  return positiveInt(path, parseObject(path, data)['id'], 'id');
}

export function encodeSubjectNode(node: SubjectNode): Buffer {
  return json({ subject: node.subject, versions: node.versions.map(({ version, id, deleted }) => ({ version, id, deleted })) });
}

export function decodeSubjectNode(path: string, data: Buffer): SubjectNode {
  const value = parseObject(path, data);
  const versions = value['versions'];
  if (!Array.isArray(versions)) return corrupt(path, 'versions is not an array');
  return {
    subject: text(path, value['subject'], 'subject'),
    versions: versions.map((entry: unknown, index): VersionEntry => {
      if (typeof entry !== 'object' || entry === null) return corrupt(path, `versions[${index}] is not an object`);
      const fields = entry as Record<string, unknown>;
      if (typeof fields['deleted'] !== 'boolean') return corrupt(path, `versions[${index}].deleted is not a boolean`);
      return {
        version: positiveInt(path, fields['version'], `versions[${index}].version`),
        id: positiveInt(path, fields['id'], `versions[${index}].id`),
        deleted: fields['deleted'],
      };
    }),
  };
}

export function encodeConfig(compatibilityLevel: string, subject?: string): Buffer {
  return json(subject === undefined ? { compatibilityLevel } : { subject, compatibilityLevel });
}

/** The stored level, unchecked against the known levels (the caller decides what an unknown one means). */
export function decodeConfig(path: string, data: Buffer): string {
  return text(path, parseObject(path, data)['compatibilityLevel'], 'compatibilityLevel');
}
