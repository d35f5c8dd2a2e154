/**
 * The `tributary schemas` command and the serde against a real registry instance (ZooKeeper
 * store on the shared ZooKeeper): outputs and exit statuses of register/get/list/check/config,
 * our serializer and @kafkajs/confluent-schema-registry reading each other's bytes, and a
 * v1 → v2 evolution decoded into a chosen reader schema.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SchemaRegistry, SchemaType } from '@kafkajs/confluent-schema-registry';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAvroSchema } from '../../../src/registry/avro-schema.js';
import { RegistryClient } from '../../../src/registry/client.js';
import { AvroDeserializer } from '../../../src/registry/serde/deserializer.js';
import { AvroSerializer } from '../../../src/registry/serde/serializer.js';
import { runTributary } from '../../support/cli.js';
import { cleanUp, startRegistry, zookeeperChroot } from './registry-support.js';

const schemasFolder = join(import.meta.dirname, '..', '..', '..', 'schemas');
const PAGE_VIEW_FILE = join(schemasFolder, 'PageViewEvent.avsc');
const PAGE_VIEW = readFileSync(PAGE_VIEW_FILE, 'utf8');

const ARTICLE_V1 = { type: 'record', name: 'Article', namespace: 'test.cli', fields: [{ name: 'title', type: 'string' }, { name: 'words', type: 'int' }] };
const ARTICLE_V2 = { ...ARTICLE_V1, fields: [...ARTICLE_V1.fields, { name: 'language', type: 'string', default: 'en' }] };
const ARTICLE_NO_DEFAULT = { ...ARTICLE_V1, fields: [...ARTICLE_V1.fields, { name: 'author', type: 'string' }] };

let url: string;
let files: string;
let client: RegistryClient;

function file(name: string, content: unknown): string {
  const path = join(files, name);
  writeFileSync(path, typeof content === 'string' ? content : JSON.stringify(content, null, 2));
  return path;
}

function schemas(...args: string[]) {
  return runTributary(['schemas', ...args, '--registry', url]);
}

beforeAll(async () => {
  url = (await startRegistry({ zookeeper: zookeeperChroot() })).url;
  client = new RegistryClient({ url });
  files = mkdtempSync(join(tmpdir(), 'tributary-schemas-cli-'));
});

afterAll(async () => {
  await cleanUp();
  rmSync(files, { recursive: true, force: true });
});

// Each command is a child process through tsx: seconds apiece on a busy machine, so generous limits.
describe('tributary schemas', { timeout: 300_000 }, () => {
  it('register prints the id and version; registering the same schema again changes nothing', async () => {
    const first = await schemas('register', '--subject', 'PageViewEvent-value', '--file', PAGE_VIEW_FILE);
    expect(first.stderr).toBe('');
    expect(first.status).toBe(0);
    const match = /^schema id (\d+) is version 1 of subject PageViewEvent-value\n$/.exec(first.stdout);
    expect(match).not.toBeNull();
    const again = await schemas('register', '--subject', 'PageViewEvent-value', '--file', PAGE_VIEW_FILE);
    expect(again.status).toBe(0);
    expect(again.stdout).toBe(first.stdout);
    expect(await client.versions('PageViewEvent-value')).toEqual([1]);
  });

  it('get prints the schema as JSON by id and by subject/version, and names what it printed on stderr', async () => {
    const latest = await client.version('PageViewEvent-value', 'latest');
    const byId = await schemas('get', '--id', String(latest.id));
    expect(byId.status).toBe(0);
    expect(JSON.parse(byId.stdout)).toEqual(JSON.parse(PAGE_VIEW));
    const bySubject = await schemas('get', '--subject', 'PageViewEvent-value');
    expect(bySubject.status).toBe(0);
    expect(JSON.parse(bySubject.stdout)).toEqual(JSON.parse(PAGE_VIEW));
    expect(bySubject.stderr).toBe(`subject PageViewEvent-value version 1: schema id ${latest.id}\n`);
    const byVersion = await schemas('get', '--subject', 'PageViewEvent-value', '--version', '1');
    expect(byVersion.stdout).toBe(bySubject.stdout);
  });

  it('get fails with status 1 and the registry\'s reason for an unknown id, subject or version, and for a bad request', async () => {
    const [unknownId, unknownSubject, unknownVersion, both, badVersion] = await Promise.all([
      schemas('get', '--id', '987654'),
      schemas('get', '--subject', 'nobody-value'),
      schemas('get', '--subject', 'PageViewEvent-value', '--version', '9'),
      schemas('get', '--id', '1', '--subject', 'PageViewEvent-value'),
      schemas('get', '--subject', 'PageViewEvent-value', '--version', 'newest'),
    ]);
    expect(unknownId.status).toBe(1);
    expect(unknownId.stdout).toBe('');
    expect(unknownId.stderr).toContain('Schema 987654 not found');
    expect(unknownId.stderr).toContain('[REGISTRY_SCHEMA_NOT_FOUND]');
    expect(unknownSubject.status).toBe(1);
    expect(unknownSubject.stderr).toContain("Subject 'nobody-value' not found.");
    expect(unknownSubject.stderr).toContain('[REGISTRY_SUBJECT_NOT_FOUND]');
    expect(unknownVersion.status).toBe(1);
    expect(unknownVersion.stderr).toContain('[REGISTRY_VERSION_NOT_FOUND]');
    expect(both.status).toBe(1);
    expect(both.stderr).toContain('schemas get needs either --id N or --subject S [--version V], not both and not neither');
    expect(badVersion.status).toBe(1);
    expect(badVersion.stderr).toContain('--version takes a positive integer, not "newest"');
  });

  it('register refuses a missing file, a file that is not JSON and an invalid Avro schema, registering nothing', async () => {
    const before = await client.subjects();
    const [missing, notJson, invalid] = await Promise.all([
      schemas('register', '--subject', 'bad-value', '--file', join(files, 'absent.avsc')),
      schemas('register', '--subject', 'bad-value', '--file', file('not-json.avsc', '{"type": "record",')),
      schemas('register', '--subject', 'bad-value', '--file', file('invalid.avsc', { type: 'record', name: 'X', fields: [{ name: 'a', type: 'nosuchtype' }] })),
    ]);
    expect(missing.status).toBe(1);
    expect(missing.stderr).toContain('absent.avsc: no such file');
    expect(notJson.status).toBe(1);
    expect(notJson.stderr).toMatch(/not-json\.avsc is not JSON \(.+\); an \.avsc file holds one Avro schema as JSON/);
    expect(invalid.status).toBe(1);
    expect(invalid.stderr).toContain('HTTP 422, error_code 42201');
    expect(invalid.stderr).toContain('[REGISTRY_INVALID_SCHEMA]');
    expect(await client.subjects()).toEqual(before);
  });

  it('check says compatible (status 0) or lists each incompatibility (status 1), and registers nothing', async () => {
    await schemas('register', '--subject', 'Article-value', '--file', file('article-v1.avsc', ARTICLE_V1));
    const [compatible, incompatible] = await Promise.all([
      schemas('check', '--subject', 'Article-value', '--file', file('article-v2.avsc', ARTICLE_V2)),
      schemas('check', '--subject', 'Article-value', '--file', file('article-no-default.avsc', ARTICLE_NO_DEFAULT)),
    ]);
    expect(compatible.status).toBe(0);
    expect(compatible.stdout).toMatch(/^compatible: .*article-v2\.avsc can be registered under subject Article-value\n$/);

    expect(incompatible.status).toBe(1);
    expect(incompatible.stdout).toMatch(/^incompatible: .*article-no-default\.avsc cannot be registered under subject Article-value\n/);
    const problems = incompatible.stdout.split('\n').filter((line) => line.startsWith('  - '));
    expect(problems.length).toBeGreaterThanOrEqual(1);
    expect(problems.join('\n')).toContain('author');
    expect(incompatible.stderr).toContain('is not compatible with subject Article-value');
    expect(incompatible.stderr).toContain('[REGISTRY_INCOMPATIBLE_SCHEMA]');
    expect(await client.versions('Article-value')).toEqual([1]);
  });

  it('check tests what registration would: every version under a transitive level, not only the latest', async () => {
    const subject = 'Transitive-value';
    const v1 = { type: 'record', name: 'T', fields: [{ name: 'a', type: 'string' }] };
    const v2 = { ...v1, fields: [...v1.fields, { name: 'b', type: 'string', default: 'x' }] };
    // Reads v2 data (b present) but not v1 data (b missing, no default).
    const v3 = { ...v1, fields: [...v1.fields, { name: 'b', type: 'string' }] };
    await client.setConfig('BACKWARD_TRANSITIVE', subject);
    await client.register(subject, JSON.stringify(v1));
    await client.register(subject, JSON.stringify(v2));
    expect((await client.testCompatibility(subject, JSON.stringify(v3), 'latest')).isCompatible).toBe(true);
    const check = await schemas('check', '--subject', subject, '--file', file('transitive-v3.avsc', v3));
    expect(check.status).toBe(1);
    expect(check.stdout).toContain('cannot be registered under subject Transitive-value');
    expect(check.stdout).toContain("'b'");
    expect(await client.versions(subject)).toEqual([1, 2]);
  });

  it('list prints every subject with its versions and latest id', async () => {
    const result = await schemas('list');
    expect(result.status).toBe(0);
    const lines = result.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^subject\s+versions\s+latest id$/);
    const rows = lines.slice(1).map((line) => line.split(/\s+/));
    const subjects = await client.subjects();
    expect(rows.map((row) => row[0])).toEqual([...subjects].sort());
    const pageView = await client.version('PageViewEvent-value', 'latest');
    expect(rows.find((row) => row[0] === 'PageViewEvent-value')).toEqual(['PageViewEvent-value', '1', String(pageView.id)]);
  });

  it('config shows and sets the global and per-subject levels, and refuses an unknown level changing nothing', async () => {
    const [global, unset] = await Promise.all([schemas('config'), schemas('config', '--subject', 'Article-value')]);
    expect(global.stdout).toBe('global: BACKWARD\n');
    expect(unset.status).toBe(0);
    expect(unset.stdout).toBe('subject Article-value: BACKWARD (no level of its own; the global level applies)\n');
    const set = await schemas('config', '--subject', 'Article-value', '--level', 'full_transitive');
    expect(set.status).toBe(0);
    expect(set.stdout).toBe('subject Article-value: FULL_TRANSITIVE\n');
    expect((await schemas('config', '--subject', 'Article-value')).stdout).toBe('subject Article-value: FULL_TRANSITIVE\n');
    expect(await client.getConfig()).toBe('BACKWARD');

    const bad = await schemas('config', '--level', 'SIDEWAYS');
    expect(bad.status).toBe(1);
    expect(bad.stderr).toContain('--level SIDEWAYS is not a compatibility level; use one of NONE, BACKWARD, BACKWARD_TRANSITIVE, FORWARD');
    expect(await client.getConfig()).toBe('BACKWARD');
    await client.setConfig('BACKWARD', 'Article-value');
  });

  it('fails with status 1 and says how to fix an unreachable registry or a bad URL', async () => {
    const [unreachable, badUrl] = await Promise.all([
      runTributary(['schemas', 'list', '--registry', 'http://127.0.0.1:9']),
      runTributary(['schemas', 'list', '--registry', '127.0.0.1:8081']),
    ]);
    expect(unreachable.status).toBe(1);
    expect(unreachable.stderr).toContain('cannot reach schema registry http://127.0.0.1:9');
    expect(unreachable.stderr).toContain('[REGISTRY_UNAVAILABLE]');
    expect(badUrl.status).toBe(1);
    expect(badUrl.stderr).toContain('give the registry as http://HOST:PORT');
  });
});

describe('serde interoperability with @kafkajs/confluent-schema-registry', { timeout: 180_000 }, () => {
  const pageView = {
    header: { eventId: '6f1d0c5e-8a51-4c1b-9b0e-1f5a2b3c4d5e', time: 1_731_000_000_000, server: 'web-3.example', service: 'frontend' },
    memberId: null,
    pageKey: 'job-view',
    url: '/jobs/view/42',
    referrer: 'https://www.example.com/feed',
    userAgent: null,
  };

  it('kafkajs decodes what our serializer wrote', async () => {
    const message = await new AvroSerializer(new RegistryClient({ url })).encode('PageViewEvent-value', pageView, PAGE_VIEW);
    expect(await new SchemaRegistry({ host: url }).decode(message)).toEqual(pageView);
  });

  it('our deserializer decodes what kafkajs wrote', async () => {
    const kafkajs = new SchemaRegistry({ host: url });
    const { id } = await kafkajs.register({ type: SchemaType.AVRO, schema: PAGE_VIEW }, { subject: 'PageViewEvent-value' });
    const message = await kafkajs.encode(id, pageView);
    expect(await new AvroDeserializer(new RegistryClient({ url })).decode(message)).toEqual(pageView);
  });

  it('evolves v1 → v2 under BACKWARD: both versions decode into a chosen reader schema, with either library', async () => {
    const subject = 'Article-evolution-value';
    const ours = new AvroSerializer(new RegistryClient({ url }));
    const kafkajs = new SchemaRegistry({ host: url });
    const v1Message = await ours.encode(subject, { title: 'Logs', words: 1200 }, JSON.stringify(ARTICLE_V1));
    const register = await schemas('register', '--subject', subject, '--file', file('evolution-v2.avsc', ARTICLE_V2));
    expect(register.status).toBe(0);
    const v2Id = (await client.version(subject, 2)).id;
    const v2Message = await kafkajs.encode(v2Id, { title: 'Streams', words: 800, language: 'nl' });
    expect(v2Message.readInt32BE(1)).not.toBe(v1Message.readInt32BE(1));

    const deserializer = new AvroDeserializer(new RegistryClient({ url }));
    // The new reader: v1 data gains the default.
    const readerV2 = parseAvroSchema(JSON.stringify(ARTICLE_V2));
    expect(await deserializer.decode(v1Message, readerV2)).toEqual({ title: 'Logs', words: 1200, language: 'en' });
    expect(await deserializer.decode(v2Message, readerV2)).toEqual({ title: 'Streams', words: 800, language: 'nl' });
    // An old reader: the field it does not know is skipped.
    const readerV1 = parseAvroSchema(JSON.stringify(ARTICLE_V1));
    expect(await deserializer.decode(v2Message, readerV1)).toEqual({ title: 'Streams', words: 800 });
    // Without a reader schema each message reads as written.
    expect(await deserializer.decode(v1Message)).toEqual({ title: 'Logs', words: 1200 });

    // The independent library agrees.
    expect(await kafkajs.decode(v1Message, { [SchemaType.AVRO]: { readerSchema: ARTICLE_V2 as never } })).toEqual({ title: 'Logs', words: 1200, language: 'en' });
  });
});
