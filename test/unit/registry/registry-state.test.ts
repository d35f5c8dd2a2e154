/**
 * The registry state over an in-process coordination store: registration and dedupe, version
 * numbering, deletes, configs, compatibility tests, subject names, and that a refused request
 * writes nothing.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { TributaryError } from '../../../src/common/errors.js';
import { createLogger } from '../../../src/common/logger.js';
import { MemoryCoordination, type MemoryCoordinationStore } from '../../../src/coordination/memory-store.js';
import { NEXT_ID_PATH, subjectPath } from '../../../src/registry/store/layout.js';
import { RegistryState } from '../../../src/registry/store/registry-state.js';
import { dumpTree, recordSchema } from './registry-state-support.js';

const logger = createLogger({ name: 'registry-state-test', level: 'silent' });
const v1 = recordSchema('User', ['name']);
/** v1 plus a field without default: BACKWARD-incompatible with v1, FORWARD-compatible. */
const v2NoDefault = recordSchema('User', ['name', 'email']);
/** v1 plus a field with a default: compatible both ways. */
const v2Default = JSON.stringify({
  type: 'record',
  name: 'User',
  fields: [
    { name: 'name', type: 'string' },
    { name: 'age', type: 'int', default: 0 },
  ],
});

let store: MemoryCoordinationStore;
let state: RegistryState;

beforeEach(async () => {
  store = new MemoryCoordination({ logger }).session();
  state = await RegistryState.open(store, { logger });
});

/** Runs `action`, expects it to fail with `code`, and checks that the stored tree is unchanged. */
async function refusedWithoutWrites(action: () => Promise<unknown>, code: string): Promise<TributaryError> {
  const before = await dumpTree(store);
  const error = await action().then(
    () => expect.fail(`expected ${code}, but it succeeded`),
    (failure: unknown) => failure,
  );
  expect(error).toBeInstanceOf(TributaryError);
  expect((error as TributaryError).code).toBe(code);
  expect(await dumpTree(store)).toEqual(before);
  return error as TributaryError;
}

describe('registration', () => {
  it('gives the first schema id 1 and version 1, and returns them again on re-registration', async () => {
    expect(await state.register('users-value', { schema: v1 })).toEqual({ id: 1, version: 1, created: true });
    expect(await state.register('users-value', { schema: v1 })).toEqual({ id: 1, version: 1, created: false });
    expect(await state.versions('users-value')).toEqual([1]);
  });

  it('treats whitespace and key order as the same schema', async () => {
    await state.register('users-value', { schema: v1 });
    const respelled = '{ "fields": [ {"type": "string", "name": "name"} ],\n "name": "User", "type": "record" }';
    expect(await state.register('users-value', { schema: respelled })).toEqual({ id: 1, version: 1, created: false });
  });

  it('gives the same schema the same id in every subject, as a new version there', async () => {
    await state.register('a', { schema: v1 });
    expect(await state.register('b', { schema: v1 })).toEqual({ id: 1, version: 1, created: true });
    expect(await state.subjectsOfId(1)).toEqual(['a', 'b']);
    expect(await state.versionsOfId(1)).toEqual([
      { subject: 'a', version: 1 },
      { subject: 'b', version: 1 },
    ]);
  });

  it('allocates a new id and the next version to a compatible new schema', async () => {
    await state.register('users-value', { schema: v1 });
    expect(await state.register('users-value', { schema: v2Default })).toEqual({ id: 2, version: 2, created: true });
    const latest = await state.version('users-value', 'latest');
    expect(latest).toMatchObject({ subject: 'users-value', version: 2, id: 2, deleted: false });
    expect(JSON.parse(latest.schema)).toEqual(JSON.parse(v2Default));
    expect(await state.maxId()).toBe(2);
  });

  it('answers re-registration of an older live version with that version, not a new one', async () => {
    await state.register('users-value', { schema: v1 });
    await state.register('users-value', { schema: v2Default });
    const before = await dumpTree(store);
    expect(await state.register('users-value', { schema: v1 })).toEqual({ id: 1, version: 1, created: false });
    expect(await dumpTree(store)).toEqual(before);
  });

  it('refuses an incompatible schema with every reason and writes nothing', async () => {
    await state.register('users-value', { schema: v1 });
    const error = await refusedWithoutWrites(() => state.register('users-value', { schema: v2NoDefault }), 'SCHEMA_INCOMPATIBLE');
    expect(error.message).toContain('Schema being registered is incompatible with an earlier schema for subject "users-value"');
    expect(error.message).toContain('READER_FIELD_MISSING_DEFAULT_VALUE');
    expect(error.message).toContain('/fields/1');
    expect(error.details['level']).toBe('BACKWARD');
  });

  it('checks at the subject level first, then the global level', async () => {
    await state.register('users-value', { schema: v1 });
    await state.setGlobalCompatibility('FORWARD');
    // Under FORWARD the old schema must read the new one: an added field is fine.
    expect((await state.register('users-value', { schema: v2NoDefault })).version).toBe(2);
    await state.setSubjectCompatibility('users-value', 'BACKWARD');
    await refusedWithoutWrites(() => state.register('users-value', { schema: recordSchema('User', ['name', 'email', 'phone']) }), 'SCHEMA_INCOMPATIBLE');
    await state.setSubjectCompatibility('users-value', 'NONE');
    expect((await state.register('users-value', { schema: recordSchema('User', ['other']) })).version).toBe(3);
  });

  it('refuses an invalid schema, another schema type and a wrong explicit version without writing', async () => {
    await state.register('users-value', { schema: v1 });
    await refusedWithoutWrites(() => state.register('users-value', { schema: '{"type":"record","name":"X"' }), 'SCHEMA_INVALID');
    await refusedWithoutWrites(() => state.register('users-value', { schema: '{"type":"nope"}' }), 'SCHEMA_INVALID');
    await refusedWithoutWrites(() => state.register('users-value', { schema: '{"type":"object"}', schemaType: 'JSON' }), 'SCHEMA_TYPE_UNSUPPORTED');
    const wrongVersion = await refusedWithoutWrites(() => state.register('users-value', { schema: v2Default, version: 5 }), 'SCHEMA_INVALID');
    expect(wrongVersion.message).toContain('the next version of subject \'users-value\' is 2');
    expect(await state.register('users-value', { schema: v2Default, version: 2 })).toMatchObject({ version: 2 });
  });

  it('refuses a schema too large for one store node', async () => {
    const doc = 'x'.repeat(1_100_000);
    await refusedWithoutWrites(() => state.register('big', { schema: recordSchema('Big', ['a'], { doc }) }), 'SCHEMA_TOO_LARGE');
  });
});

describe('version numbering and ids after deletes', () => {
  it('continues numbering after a soft delete and reuses the id of a soft-deleted schema', async () => {
    await state.register('s', { schema: v1 });
    await state.register('s', { schema: v2Default });
    expect(await state.deleteSubject('s')).toEqual([1, 2]);
    expect(await state.register('s', { schema: v1 })).toEqual({ id: 1, version: 3, created: true });
    expect(await state.versions('s')).toEqual([3]);
    expect(await state.versions('s', true)).toEqual([1, 2, 3]);
  });

  it('restarts numbering at 1 after a permanent delete, keeps ids readable and never reuses them', async () => {
    await state.register('s', { schema: v1 });
    await state.deleteSubject('s');
    expect(await state.deleteSubject('s', true)).toEqual([1]);
    expect((await state.schemaById(1)).schema).toBe(JSON.stringify(JSON.parse(v1)));
    // A new schema gets a new id; the forgotten one keeps its id when it comes back.
    expect(await state.register('s', { schema: v2NoDefault })).toEqual({ id: 2, version: 1, created: true });
    await state.setSubjectCompatibility('s', 'NONE');
    expect(await state.register('s', { schema: v1 })).toEqual({ id: 1, version: 2, created: true });
  });
});

describe('reads', () => {
  beforeEach(async () => {
    await state.register('s', { schema: v1 });
    await state.register('s', { schema: v2Default });
  });

  it('answers versions by number and latest, hiding soft-deleted ones unless asked', async () => {
    expect((await state.version('s', 1)).id).toBe(1);
    await state.deleteVersion('s', 2);
    expect((await state.version('s', 'latest')).version).toBe(1);
    await expect(state.version('s', 2)).rejects.toMatchObject({ code: 'VERSION_NOT_FOUND', message: 'Version 2 not found.' });
    expect(await state.version('s', 2, true)).toMatchObject({ version: 2, deleted: true });
    await expect(state.version('s', 9)).rejects.toMatchObject({ code: 'VERSION_NOT_FOUND' });
    await expect(state.version('t', 1)).rejects.toMatchObject({ code: 'SUBJECT_NOT_FOUND', message: "Subject 't' not found." });
  });

  it('treats a subject whose versions are all soft-deleted as absent unless deleted ones are asked for', async () => {
    await state.deleteSubject('s');
    expect(await state.subjects()).toEqual([]);
    expect(await state.subjects(true)).toEqual(['s']);
    await expect(state.versions('s')).rejects.toMatchObject({ code: 'SUBJECT_NOT_FOUND' });
    await expect(state.version('s', 'latest')).rejects.toMatchObject({ code: 'SUBJECT_NOT_FOUND' });
  });

  it('looks a schema up under a subject by its canonical form', async () => {
    const found = await state.lookup('s', { schema: ` ${v2Default} ` });
    expect(found).toMatchObject({ subject: 's', version: 2, id: 2 });
    await expect(state.lookup('s', { schema: v2NoDefault })).rejects.toMatchObject({ code: 'SCHEMA_NOT_FOUND', message: 'Schema not found' });
    await expect(state.lookup('nobody', { schema: v1 })).rejects.toMatchObject({ code: 'SUBJECT_NOT_FOUND' });
    await state.deleteVersion('s', 2);
    await expect(state.lookup('s', { schema: v2Default })).rejects.toMatchObject({ code: 'SCHEMA_NOT_FOUND' });
    expect(await state.lookup('s', { schema: v2Default }, true)).toMatchObject({ version: 2, deleted: true });
  });

  it('answers an unknown or impossible id with SCHEMA_NOT_FOUND', async () => {
    await expect(state.schemaById(3)).rejects.toMatchObject({ code: 'SCHEMA_NOT_FOUND', message: 'Schema 3 not found' });
    await expect(state.schemaById(0)).rejects.toMatchObject({ code: 'SCHEMA_NOT_FOUND' });
    await expect(state.subjectsOfId(3)).rejects.toMatchObject({ code: 'SCHEMA_NOT_FOUND' });
  });
});

describe('deletes', () => {
  beforeEach(async () => {
    await state.register('s', { schema: v1 });
    await state.register('s', { schema: v2Default });
  });

  it('deletes a subject softly, then permanently, with Confluent codes for the wrong order', async () => {
    await refusedWithoutWrites(() => state.deleteSubject('s', true), 'SUBJECT_NOT_SOFT_DELETED');
    expect(await state.deleteSubject('s')).toEqual([1, 2]);
    const again = await refusedWithoutWrites(() => state.deleteSubject('s'), 'SUBJECT_SOFT_DELETED');
    expect(again.message).toBe("Subject 's' was soft deleted.Set permanent=true to delete permanently");
    expect(await state.deleteSubject('s', true)).toEqual([1, 2]);
    await refusedWithoutWrites(() => state.deleteSubject('s'), 'SUBJECT_NOT_FOUND');
    await refusedWithoutWrites(() => state.deleteSubject('unknown'), 'SUBJECT_NOT_FOUND');
  });

  it('deletes a version softly, then permanently, with Confluent codes for the wrong order', async () => {
    await refusedWithoutWrites(() => state.deleteVersion('s', 1, true), 'VERSION_NOT_SOFT_DELETED');
    expect(await state.deleteVersion('s', 1)).toBe(1);
    await refusedWithoutWrites(() => state.deleteVersion('s', 1), 'VERSION_SOFT_DELETED');
    expect(await state.deleteVersion('s', 1, true)).toBe(1);
    await refusedWithoutWrites(() => state.deleteVersion('s', 1), 'VERSION_NOT_FOUND');
    await refusedWithoutWrites(() => state.deleteVersion('x', 1), 'SUBJECT_NOT_FOUND');
    expect(await state.versions('s', true)).toEqual([2]);
  });

  it("resolves 'latest' for deletion to the highest version, deleted or not", async () => {
    expect(await state.deleteVersion('s', 'latest')).toBe(2);
    await refusedWithoutWrites(() => state.deleteVersion('s', 'latest'), 'VERSION_SOFT_DELETED');
    expect(await state.deleteVersion('s', 'latest', true)).toBe(2);
  });

  it("forgets the subject's config on a permanent delete", async () => {
    await state.setSubjectCompatibility('s', 'FULL');
    await state.deleteSubject('s');
    expect(await state.subjectCompatibility('s')).toBe('FULL');
    await state.deleteSubject('s', true);
    expect(await state.subjectCompatibility('s')).toBeUndefined();
  });
});

describe('compatibility configuration', () => {
  it('defaults the global level to BACKWARD and resets it on delete', async () => {
    expect(await state.globalCompatibility()).toBe('BACKWARD');
    await state.setGlobalCompatibility('FULL_TRANSITIVE');
    expect(await state.globalCompatibility()).toBe('FULL_TRANSITIVE');
    expect(await state.deleteGlobalCompatibility()).toBe('FULL_TRANSITIVE');
    expect(await state.globalCompatibility()).toBe('BACKWARD');
  });

  it('keeps a subject level, allowed before the subject has schemas, until deleted', async () => {
    expect(await state.subjectCompatibility('new')).toBeUndefined();
    await state.setSubjectCompatibility('new', 'NONE');
    expect(await state.subjectCompatibility('new')).toBe('NONE');
    expect(await state.effectiveCompatibility('new')).toBe('NONE');
    expect(await state.deleteSubjectCompatibility('new')).toBe('NONE');
    await refusedWithoutWrites(() => state.deleteSubjectCompatibility('new'), 'SUBJECT_CONFIG_NOT_FOUND');
    expect(await state.effectiveCompatibility('new')).toBe('BACKWARD');
  });
});

describe('compatibility tests', () => {
  beforeEach(async () => {
    await state.register('s', { schema: v1 });
  });

  it('tests against the latest, a numbered version, or everything registration checks', async () => {
    expect(await state.testCompatibility('s', { schema: v2Default }, 'latest')).toEqual([]);
    const problems = await state.testCompatibility('s', { schema: v2NoDefault }, 1);
    expect(problems.map((problem) => problem.type)).toEqual(['READER_FIELD_MISSING_DEFAULT_VALUE']);
    expect(await state.testCompatibility('s', { schema: v2NoDefault }, 'all')).toHaveLength(1);
  });

  it('finds a missing subject compatible with latest, but a missing numbered version not found', async () => {
    expect(await state.testCompatibility('nobody', { schema: v1 }, 'latest')).toEqual([]);
    await expect(state.testCompatibility('nobody', { schema: v1 }, 1)).rejects.toMatchObject({ code: 'VERSION_NOT_FOUND' });
    await expect(state.testCompatibility('s', { schema: v1 }, 7)).rejects.toMatchObject({ code: 'VERSION_NOT_FOUND' });
  });

  it('writes nothing', async () => {
    const before = await dumpTree(store);
    await state.testCompatibility('s', { schema: v2NoDefault }, 'all');
    expect(await dumpTree(store)).toEqual(before);
  });
});

describe('subject names', () => {
  const odd = ['a/b', '.', '..', 'x:y.z', '100% sure', 'ümlaut ✓ 😀', 'with space', '%2F'];

  it('stores names with any printable character, each under its own node', async () => {
    for (const subject of odd) await state.register(subject, { schema: v1 });
    expect(await state.subjects()).toEqual([...odd].sort());
    for (const subject of odd) expect(await state.versions(subject)).toEqual([1]);
    expect(subjectPath('a/b')).toBe('/schemas/subjects/a%2Fb');
    expect(subjectPath('..')).toBe('/schemas/subjects/%2E%2E');
    expect(subjectPath('%2F')).toBe('/schemas/subjects/%252F');
  });

  it('refuses empty, control-character, unpaired-surrogate and reserved names without writing', async () => {
    for (const subject of ['', 'tab\there', 'nul\u0000', '\ud800x', '__GLOBAL', '__EMPTY']) {
      const error = await refusedWithoutWrites(() => state.register(subject, { schema: v1 }), 'SUBJECT_INVALID');
      expect(error.message).toContain('is not valid');
    }
  });
});

describe('the id counter', () => {
  it('resumes above the highest stored id if the counter node was lost', async () => {
    await state.register('a', { schema: v1 });
    await state.register('b', { schema: v2NoDefault });
    await store.delete(NEXT_ID_PATH);
    const reopened = await RegistryState.open(store, { logger });
    expect((await reopened.register('c', { schema: recordSchema('Other', ['x']) })).id).toBe(3);
  });
});
