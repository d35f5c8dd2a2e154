/**
 * Hostile requests for the schema registry fuzz run (test/chaos/registry-fuzz.ts), all from one
 * seeded generator so a run replays from its seed:
 *
 *   valid schemas      random Avro schemas (records, enums, fixed, arrays, maps, unions, named
 *                      references, recursion through a union, defaults of the right type), and
 *                      evolutions of a subject's last accepted schema (a field added with a
 *                      default, one removed), registered, looked up and tested
 *   mutated schemas    the same, then broken: wrong types, deep nesting, huge enums and unions,
 *                      recursive named types, unicode and escape abuse in names and docs,
 *                      defaults that do not match, duplicate names and symbols, keys removed,
 *                      the text cut or flipped
 *   bad bodies         invalid JSON, wrong shapes, huge strings and numbers, deep nesting
 *   bad headers        content types and charsets, Accept, Content-Length lies, duplicate and
 *                      missing headers, chunked lies, oversized headers (raw socket requests)
 *   random routes      random paths (unicode, percent-encoding abuse, long names, bad versions
 *                      and ids, odd queries) and methods
 *
 * The schema subjects (`fz-<generation>-<n>`) stay under BACKWARD_TRANSITIVE (set by the run; the generator
 * never changes the global level or theirs), so that afterwards every pair of their live versions
 * must be compatible. Valid config changes go to `cfg-<n>` subjects only.
 */

export type RequestKind = 'valid-schema' | 'mutated-schema' | 'bad-body' | 'bad-headers' | 'random-route';
export const REQUEST_KINDS: readonly RequestKind[] = ['valid-schema', 'mutated-schema', 'bad-body', 'bad-headers', 'random-route'];

export interface FuzzRequest {
  readonly kind: RequestKind;
  readonly method: string;
  /** Path and query, already percent-encoded (or deliberately not). */
  readonly path: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body?: Buffer;
  /** Bytes to write on a raw socket instead (header abuse); the answer is read until close. */
  readonly raw?: Buffer;
  /**
   * Half-close the raw socket after writing: for the requests whose declared length promises more
   * than is sent, so the registry meets the end of the input instead of waiting for it.
   */
  readonly halfClose?: boolean;
  /**
   * The registry may close without an answer that can be read: a body over the limit (TCP reset
   * while uploading) or a client that ended its side mid-body.
   */
  readonly mayCloseUnanswered?: boolean;
  /** The schema text of a registration, to check that an accepted schema is valid. */
  readonly registers?: { readonly subject: string; readonly schema: string };
  /** What the request does, for violation reports. */
  readonly what: string;
}

export const SCHEMA_SUBJECTS = 6;
const SUBJECT_GENERATION = 2500;
const CONFIG_SUBJECTS = 3;

const PRIMITIVES = ['null', 'boolean', 'int', 'long', 'float', 'double', 'bytes', 'string'] as const;
const LEVELS = ['NONE', 'BACKWARD', 'BACKWARD_TRANSITIVE', 'FORWARD', 'FORWARD_TRANSITIVE', 'FULL', 'FULL_TRANSITIVE'];
const CONTENT_TYPE = 'application/vnd.schemaregistry.v1+json';

/** Every byte of the UTF-8 form (a lone surrogate becomes U+FFFD's bytes), percent-encoded. */
function percentEncode(text: string): string {
  return [...Buffer.from(text, 'utf8')].map((byte) => `%${byte.toString(16).padStart(2, '0')}`).join('');
}

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

export class RegistryRequestGenerator {
  /** The last schema each fz subject accepted (told by the run), to evolve from. */
  private readonly accepted = new Map<string, string>();
  private names = 0;
  private generated = 0;

  constructor(private readonly random: () => number) {}

  /** The run tells the generator which registrations were accepted. */
  accept(subject: string, schema: string): void {
    this.accepted.set(subject, schema);
  }

  next(): FuzzRequest {
    this.generated += 1;
    const roll = this.random();
    if (roll < 0.3) return this.validSchemaRequest();
    if (roll < 0.6) return this.mutatedSchemaRequest();
    if (roll < 0.75) return this.badBodyRequest();
    if (roll < 0.85) return this.badHeadersRequest();
    return this.randomRouteRequest();
  }

  // ---- helpers ---------------------------------------------------------------------------------

  private int(below: number): number {
    return Math.floor(this.random() * below);
  }

  private pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)]!;
  }

  private chance(p: number): boolean {
    return this.random() < p;
  }

  /**
   * A schema subject of the current generation: new subjects every SUBJECT_GENERATION requests, so
   * that no subject grows without end (a transitive check reads every live version).
   */
  private schemaSubject(): string {
    return `fz-${Math.floor(this.generated / SUBJECT_GENERATION)}-${this.int(SCHEMA_SUBJECTS)}`;
  }

  private name(): string {
    this.names += 1;
    return `N${this.names}_${this.int(1000)}`;
  }

  // ---- valid schemas ---------------------------------------------------------------------------

  /** A random valid schema; `defined` collects named types' full names for later references. */
  schema(depth = 0, defined: string[] = [], within?: string): Json {
    const roll = this.random();
    if (depth >= 4 || roll < 0.3) return this.pick(PRIMITIVES);
    if (roll < 0.4 && defined.length > 0) return this.pick(defined);
    if (roll < 0.6) return this.record(depth, defined);
    if (roll < 0.68) {
      const name = this.name();
      defined.push(name);
      const symbols = Array.from({ length: 1 + this.int(6) }, (_, index) => `S${index}`);
      return { type: 'enum', name, symbols, ...(this.chance(0.3) ? { default: symbols[0]! } : {}) };
    }
    if (roll < 0.74) {
      const name = this.name();
      defined.push(name);
      return { type: 'fixed', name, size: this.int(20) };
    }
    if (roll < 0.82) return { type: 'array', items: this.schema(depth + 1, defined, within) };
    if (roll < 0.88) return { type: 'map', values: this.schema(depth + 1, defined, within) };
    // A union: null first (so a record can refer to itself), distinct branch kinds.
    const branches: Json[] = ['null'];
    if (within !== undefined && this.chance(0.4)) branches.push(within);
    const used = new Set<string>(['null']);
    for (let index = 0; index < 1 + this.int(3); index += 1) {
      const primitive = this.pick(PRIMITIVES);
      if (!used.has(primitive)) {
        used.add(primitive);
        branches.push(primitive);
      }
    }
    return branches;
  }

  private record(depth: number, defined: string[]): JsonObject {
    const name = this.name();
    defined.push(name);
    const fields: JsonObject[] = [];
    for (let index = 0; index < this.int(5); index += 1) {
      const type = this.schema(depth + 1, defined, name);
      const field: JsonObject = { name: `f${index}`, type };
      const fallback = this.defaultOf(type, defined, 0);
      if (fallback !== undefined && this.chance(0.5)) field['default'] = fallback;
      if (this.chance(0.1)) field['doc'] = this.unicodeText();
      fields.push(field);
    }
    return { type: 'record', name, ...(this.chance(0.2) ? { namespace: `ns${this.int(5)}.x` } : {}), fields };
  }

  /** A default of `type` that Avro accepts, or undefined where building one is not worth it (named references). */
  private defaultOf(type: Json, defined: readonly string[], depth: number): Json | undefined {
    if (depth > 3) return undefined;
    if (typeof type === 'string') {
      switch (type) {
        case 'null':
          return null;
        case 'boolean':
          return this.chance(0.5);
        case 'int':
        case 'long':
          return this.int(2000) - 1000;
        case 'float':
        case 'double':
          return this.random() * 100;
        case 'bytes':
        case 'string':
          return this.chance(0.5) ? '' : '\u00ff\u0000a';
        default:
          return undefined;
      }
    }
    if (Array.isArray(type)) return type.length === 0 ? undefined : this.defaultOf(type[0]!, defined, depth + 1);
    if (type === null || typeof type !== 'object') return undefined;
    const kind = type['type'];
    if (typeof kind !== 'string') return undefined;
    switch (kind) {
      case 'array':
        return [];
      case 'map':
        return {};
      case 'enum':
        return (type['symbols'] as string[])[0] ?? undefined;
      case 'fixed':
        return 'x'.repeat(type['size'] as number);
      case 'record': {
        const value: JsonObject = {};
        for (const field of type['fields'] as JsonObject[]) {
          const fallback = this.defaultOf(field['type']!, defined, depth + 1);
          if (fallback === undefined) return undefined;
          value[field['name'] as string] = fallback;
        }
        return value;
      }
      default:
        return undefined;
    }
  }

  /** A schema for `subject`: an evolution of its last accepted one (often compatible), or a new one. */
  private schemaFor(subject: string): Json {
    const last = this.accepted.get(subject);
    if (last !== undefined && this.chance(0.6)) {
      const evolved = JSON.parse(last) as Json;
      if (evolved !== null && typeof evolved === 'object' && !Array.isArray(evolved) && evolved['type'] === 'record') {
        const fields = [...(evolved['fields'] as JsonObject[])];
        if (fields.length > 0 && this.chance(0.3)) fields.splice(this.int(fields.length), 1);
        else {
          const type = this.pick(PRIMITIVES);
          fields.push({ name: `e${this.int(1_000_000)}`, type, ...(this.chance(0.85) ? { default: this.defaultOf(type, [], 0) ?? null } : {}) });
        }
        return { ...evolved, fields };
      }
    }
    const defined: string[] = [];
    return this.chance(0.8) ? this.record(0, defined) : this.schema(0, defined);
  }

  private schemaBody(schema: string, extra: JsonObject = {}): Buffer {
    return Buffer.from(JSON.stringify({ schema, ...extra }));
  }

  private json(method: string, path: string, body: Buffer | undefined, kind: RequestKind, what: string, registers?: FuzzRequest['registers']): FuzzRequest {
    return { kind, method, path, headers: body === undefined ? {} : { 'content-type': CONTENT_TYPE }, ...(body === undefined ? {} : { body }), ...(registers === undefined ? {} : { registers }), what };
  }

  /** A schema sent to one of the schema endpoints. */
  private schemaRequest(kind: RequestKind, subject: string, schema: string, what: string): FuzzRequest {
    const roll = this.random();
    const encoded = encodeURIComponent(subject);
    const body = this.schemaBody(schema, this.chance(0.05) ? { schemaType: 'AVRO' } : {});
    if (roll < 0.6) return this.json('POST', `/subjects/${encoded}/versions${this.chance(0.1) ? '?normalize=true' : ''}`, body, kind, `register ${what}`, { subject, schema });
    if (roll < 0.75) return this.json('POST', `/subjects/${encoded}${this.chance(0.2) ? '?deleted=true' : ''}`, body, kind, `look up ${what}`);
    if (roll < 0.9) return this.json('POST', `/compatibility/subjects/${encoded}/versions/latest${this.chance(0.5) ? '?verbose=true' : ''}`, body, kind, `test ${what} against latest`);
    return this.json('POST', `/compatibility/subjects/${encoded}/versions`, body, kind, `test ${what} against all`);
  }

  private validSchemaRequest(): FuzzRequest {
    const subject = this.schemaSubject();
    return this.schemaRequest('valid-schema', subject, JSON.stringify(this.schemaFor(subject)), 'a valid schema');
  }

  // ---- mutated schemas -------------------------------------------------------------------------

  private mutatedSchemaRequest(): FuzzRequest {
    const subject = this.schemaSubject();
    const [schema, how] = this.mutatedSchema(this.schemaFor(subject));
    return this.schemaRequest('mutated-schema', subject, schema, `a schema with ${how}`);
  }

  /** Every object node of a document, for picking one to break. */
  private objects(node: Json, into: JsonObject[] = []): JsonObject[] {
    if (Array.isArray(node)) for (const child of node) this.objects(child, into);
    else if (node !== null && typeof node === 'object') {
      into.push(node);
      for (const child of Object.values(node)) this.objects(child, into);
    }
    return into;
  }

  mutatedSchema(valid: Json): [text: string, how: string] {
    const schema = JSON.parse(JSON.stringify(valid)) as Json;
    const nodes = this.objects(schema);
    const node = nodes.length === 0 ? undefined : this.pick(nodes);
    const mutation = this.int(14);
    switch (mutation) {
      case 0: {
        if (node === undefined) return [JSON.stringify({ type: 'strin' }), 'an unknown type name'];
        node['type'] = this.pick<Json>([42, 'strin', {}, [], null, true, 'record', 'enum', 'fixed', 'array', 'map', 'error', '\u0000', 'int ']);
        return [JSON.stringify(schema), 'a wrong "type"'];
      }
      case 1: {
        const levels = this.pick([50, 199, 201, 400, 999, 1001, 1001, 5000, 5000, 50_000]);
        const kind = this.chance(0.5) ? '{"type":"array","items":' : '{"type":"map","values":';
        return [`${kind.repeat(levels)}"int"${'}'.repeat(levels)}`, `${levels} levels of nesting`];
      }
      case 2: {
        const count = this.chance(0.1) ? this.pick([60_000, 150_000]) : this.pick([100, 1000, 10_000]);
        const symbols = Array.from({ length: count }, (_, index) => `S${index}`);
        if (this.chance(0.2)) symbols.push('S7');
        return [JSON.stringify({ type: 'enum', name: 'Huge', symbols }), `an enum of ${symbols.length} symbols`];
      }
      case 3: {
        const count = this.chance(0.1) ? this.pick([5000, 30_000]) : this.pick([10, 100, 1000]);
        const branches = Array.from({ length: count }, (_, index) => ({ type: 'fixed', name: `F${index}`, size: index % 7 }));
        if (this.chance(0.3)) branches.push({ type: 'fixed', name: 'F1', size: 1 });
        return [JSON.stringify(branches), `a union of ${branches.length} branches`];
      }
      case 4: {
        // Recursion: through a union (valid), directly (no finite value), through an undefined name.
        const name = this.name();
        const shapes: Json[] = [
          { type: 'record', name, fields: [{ name: 'next', type: ['null', name] }, { name: 'v', type: 'int' }] },
          { type: 'record', name, fields: [{ name: 'next', type: name }] },
          { type: 'record', name, fields: [{ name: 'next', type: { type: 'array', items: name } }, { name: 'm', type: { type: 'map', values: [name, 'null'] } }] },
          { type: 'record', name, fields: [{ name: 'next', type: `${name}X` }] },
          { type: 'record', name, fields: [{ name: 'a', type: { type: 'record', name, fields: [] } }] },
          { type: 'record', name, fields: [{ name: 'a', type: ['null', name], default: { a: null } }] },
        ];
        return [JSON.stringify(this.pick(shapes)), 'a recursive named type'];
      }
      case 5: {
        const target = node ?? {};
        const abuse = this.unicodeText();
        const key = this.pick(['name', 'namespace', 'doc', 'aliases', 'symbols']);
        target[key] = key === 'aliases' || key === 'symbols' ? [abuse, abuse] : abuse;
        return [JSON.stringify(schema), `unicode in "${key}"`];
      }
      case 6: {
        const fields = nodes.filter((candidate) => Array.isArray(candidate['fields']) && (candidate['fields']).length > 0);
        if (fields.length === 0) return [JSON.stringify({ type: 'record', name: 'D', fields: [{ name: 'a', type: 'int', default: 'no' }] }), 'a default that does not match'];
        const field = this.pick(this.pick(fields)['fields'] as JsonObject[]);
        field['default'] = this.pick<Json>(['no', 1.5, -1, 2 ** 63, null, true, [], {}, [1, 'x'], { a: 1 }, '\ud800', 'x'.repeat(100)]);
        return [JSON.stringify(schema), 'a default that does not match'];
      }
      case 7: {
        const records = nodes.filter((candidate) => Array.isArray(candidate['fields']) && (candidate['fields']).length > 0);
        if (records.length > 0 && this.chance(0.6)) {
          const record = this.pick(records);
          const fields = record['fields'] as JsonObject[];
          fields.push({ ...fields[0]!, type: 'string' });
          return [JSON.stringify(schema), 'a duplicate field name'];
        }
        return [JSON.stringify({ type: 'record', name: 'Dup', fields: [{ name: 'a', type: { type: 'enum', name: 'E', symbols: ['A', 'A'] } }, { name: 'b', type: { type: 'fixed', name: 'Dup', size: 1 } }] }), 'duplicate type names and symbols'];
      }
      case 8: {
        if (node === undefined) return ['{}', 'no "type"'];
        const key = this.pick(Object.keys(node));
        delete node[key];
        return [JSON.stringify(schema), `"${key}" removed`];
      }
      case 9: {
        const text = JSON.stringify(schema);
        return [text.slice(0, this.int(text.length)), 'the text cut short'];
      }
      case 10: {
        const bytes = Buffer.from(JSON.stringify(schema));
        for (let flips = 0; flips < 1 + this.int(3); flips += 1) bytes[this.int(bytes.length)] = this.int(256);
        return [bytes.toString('latin1'), 'bytes flipped'];
      }
      case 11: {
        const number = this.pick(['1e400', '-1e400', '123456789012345678901234567890', '1e-400', '-0', '9007199254740993']);
        const text = JSON.stringify({ type: 'record', name: 'Num', fields: [{ name: 'a', type: this.pick(['int', 'long', 'float', 'double']), default: 0 }] }).replace('"default":0', `"default":${number}`);
        return [text, `the default ${number}`];
      }
      case 12: {
        const target = node ?? {};
        target[this.pick(['size', 'order', 'items', 'values', 'fields', 'symbols', 'logicalType', 'precision'])] = this.pick<Json>([-1, 2 ** 31, 1e20, 'x', null, [], {}, 'decimal', 0.5]);
        return [JSON.stringify(schema), 'an attribute of the wrong kind'];
      }
      default:
        return [this.pick(['', ' ', 'null', '[]', '{}', '"record"', '"Unknown"', '[[]]', '["null","null"]', '{"type":"record","name":"R","fields":{}}', '\ufeff"int"']), 'a degenerate schema'];
    }
  }

  private unicodeText(): string {
    return this.pick([
      'naïve',
      'N\u0000ul',
      '\ud800lone',
      'emoji😀',
      'back\\slash"quote',
      '\u202eRTL',
      'a'.repeat(this.int(5000)),
      'line\nbreak',
      '\u00e9t\u00e9',
      'x.y.z',
      '.lead',
      '1digit',
      '',
      '\uffff',
      'ä'.repeat(300),
    ]);
  }

  // ---- bad bodies ------------------------------------------------------------------------------

  private badBodyRequest(): FuzzRequest {
    const roll = this.int(10);
    let body: Buffer;
    let what: string;
    if (roll === 0) {
      const text = JSON.stringify({ schema: JSON.stringify(this.schemaFor(this.schemaSubject())) });
      body = Buffer.from(text.slice(0, this.int(text.length)));
      what = 'truncated JSON';
    } else if (roll === 1) {
      body = Buffer.from(Array.from({ length: 1 + this.int(300) }, () => this.int(256)));
      what = 'random bytes';
    } else if (roll === 2) {
      body = Buffer.from(this.pick(['[]', '"x"', '1', 'null', 'true', '{"schema":5}', '{"schema":{"type":"int"}}', '{"schema":["int"]}', '{"schema":null}', '{"schemaType":"PROTOBUF","schema":"syntax = \\"proto3\\";"}', '{"schemaType":5,"schema":"\\"int\\""}', '{"schema":"\\"int\\"","references":[{"name":"x","subject":"y","version":1}]}', '{"schema":"\\"int\\"","references":{}}', '{"schema":"\\"int\\"","version":-5}', '{"schema":"\\"int\\"","version":"1"}', '{"schema":"\\"int\\"","id":-1}', '{"compatibility":"FULL"}', '{"__proto__":{"schema":"\\"int\\""}}', '{"constructor":{"prototype":{"x":1}},"schema":"\\"int\\""}']));
      what = 'a body of the wrong shape';
    } else if (roll === 3) {
      const size = this.chance(0.2) ? this.pick([3_000_000, 5_000_000]) : this.pick([10_000, 100_000, 1_000_000]);
      body = Buffer.from(JSON.stringify({ schema: JSON.stringify({ type: 'record', name: 'Big', doc: 'd'.repeat(size), fields: [] }) }));
      what = `a ${size}-character doc`;
      if (size > 4_000_000) {
        // Over the body limit: the registry answers 413 and closes while the body still arrives, so
        // the answer is read from a raw socket (an HTTP client whose upload fails drops it).
        const path = `/subjects/${this.schemaSubject()}/versions`;
        const head = `POST ${path} HTTP/1.1\r\nHost: registry\r\nContent-Type: ${CONTENT_TYPE}\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n`;
        return { kind: 'bad-body', method: 'POST', path, headers: {}, raw: Buffer.concat([Buffer.from(head), body]), mayCloseUnanswered: true, what };
      }
    } else if (roll === 4) {
      body = Buffer.from(`{"schema":"\\"int\\"","version":${this.pick(['1e400', '-1e400', '123456789012345678901234567890', '0.5', '-0', '1e2', '9007199254740993'])}}`);
      what = 'a huge number';
    } else if (roll === 5) {
      const depth = this.chance(0.1) ? this.pick([100_000, 500_000]) : this.pick([100, 1000, 10_000]);
      body = Buffer.from(`{"schema":"\\"int\\"","x":${'['.repeat(depth)}${']'.repeat(depth)}}`);
      what = `${depth} levels of JSON nesting`;
    } else if (roll === 6) {
      body = Buffer.from(`\ufeff${JSON.stringify({ schema: '"int"' })}`);
      what = 'a byte order mark';
    } else if (roll === 7) {
      body = Buffer.from(this.pick(['NaN', '{"schema": NaN}', "{'schema': 'int'}", '{"schema":"\\"int\\"",}', '{"schema":"\\ud800"}', '{"schema":"\\u00"}', '{"a":1}{"b":2}', '{"compatibility": "BACKWARD"']));
      what = 'almost JSON';
    } else {
      // A config or mode body, valid or not, to a subject the schema chains do not depend on.
      const subject = `cfg-${this.int(CONFIG_SUBJECTS)}`;
      const mode = this.chance(0.3);
      const value = this.pick<Json>([...LEVELS, 'backward', ' full ', 'SOMETIMES', 5, null, [], 'READWRITE', 'READONLY', 'IMPORT']);
      return this.json('PUT', `/${mode ? 'mode' : 'config'}/${subject}`, Buffer.from(JSON.stringify({ [mode ? 'mode' : 'compatibility']: value })), 'bad-body', `a ${mode ? 'mode' : 'config'} body ${JSON.stringify(value)}`);
    }
    const subject = this.schemaSubject();
    const path = this.pick([`/subjects/${subject}/versions`, `/subjects/${subject}`, `/compatibility/subjects/${subject}/versions/latest`, '/config/cfg-0', '/mode/cfg-1']);
    const method = path.startsWith('/config') || path.startsWith('/mode') ? 'PUT' : 'POST';
    return this.json(method, path, body, 'bad-body', what);
  }

  // ---- bad headers (raw sockets) ---------------------------------------------------------------

  private badHeadersRequest(): FuzzRequest {
    const body = this.schemaBody(JSON.stringify(this.schemaFor(this.schemaSubject())));
    const path = `/subjects/${this.schemaSubject()}/versions`;
    const roll = this.int(12);
    const contentType = this.pick([
      CONTENT_TYPE,
      'application/json',
      'application/json; charset=utf-8',
      'application/json; charset="UTF-8"',
      'application/json; charset=utf-16le',
      'application/json; charset=latin1',
      'application/json; charset=bogus-9',
      'application/vnd.schemaregistry+json',
      'application/octet-stream',
      'text/plain',
      'multipart/form-data; boundary=x',
      'application/x-www-form-urlencoded',
      '',
      'application/json;;;',
      '*/*',
    ]);
    const lines: string[] = [`POST ${path} HTTP/1.1`, 'Host: registry'];
    let payload = body;
    let what: string;
    let halfClose = false;
    switch (roll) {
      case 0:
        lines.push(`Content-Type: ${contentType}`, `Content-Length: ${body.length}`);
        what = `Content-Type "${contentType}"`;
        break;
      case 1:
        lines.push(`Content-Type: ${CONTENT_TYPE}`, `Content-Length: ${body.length + 1 + this.int(100)}`);
        what = 'a Content-Length longer than the body';
        halfClose = true;
        break;
      case 2:
        lines.push(`Content-Type: ${CONTENT_TYPE}`, `Content-Length: ${Math.max(body.length - 1 - this.int(10), 0)}`);
        what = 'a Content-Length shorter than the body';
        break;
      case 3:
        lines.push(`Content-Type: ${CONTENT_TYPE}`, `Content-Length: ${body.length}`, `Content-Length: ${body.length + 5}`);
        what = 'two different Content-Lengths';
        break;
      case 4:
        lines.push(`Content-Type: ${CONTENT_TYPE}`, 'Content-Type: text/plain', `Content-Length: ${body.length}`);
        what = 'two Content-Types';
        break;
      case 5:
        lines.push(`Content-Type: ${CONTENT_TYPE}`);
        what = 'no Content-Length';
        break;
      case 6:
        lines.push(`Content-Type: ${CONTENT_TYPE}`, 'Transfer-Encoding: chunked');
        payload = Buffer.concat([Buffer.from(`${(body.length + this.int(50)).toString(16)}\r\n`), body, Buffer.from('\r\n0\r\n\r\n')]);
        what = 'a chunk size that lies';
        halfClose = true;
        break;
      case 7:
        lines.push(`Content-Type: ${CONTENT_TYPE}`, `Content-Encoding: ${this.pick(['gzip', 'br', 'deflate', 'identity, gzip'])}`, `Content-Length: ${body.length}`);
        what = 'a Content-Encoding the body does not have';
        break;
      case 8:
        lines.push(`Content-Type: ${CONTENT_TYPE}`, `Content-Length: ${body.length}`, `X-Padding: ${'p'.repeat(this.pick([8000, 20_000, 70_000]))}`);
        what = 'oversized headers';
        break;
      case 9:
        lines.splice(1, 1);
        lines.push(`Content-Type: ${CONTENT_TYPE}`, `Content-Length: ${body.length}`);
        what = 'no Host';
        break;
      case 10:
        lines.push(`Content-Type: ${CONTENT_TYPE}`, `Content-Length: ${this.pick(['-1', 'abc', '1e3', '99999999999999999999', ' 5'])}`);
        what = 'a Content-Length that is not a length';
        break;
      default:
        lines.push(`Content-Type: ${CONTENT_TYPE}`, `Content-Length: ${body.length}`, `Accept: ${this.pick(['text/html', 'application/xml;q=1, */*;q=0', '*', 'application/*', 'application/json;q=abc', '', ',,,', 'application/vnd.schemaregistry.v1+json;q=0'])}`);
        what = 'an odd Accept';
    }
    lines.push('Connection: close');
    const raw = Buffer.concat([Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1'), payload]);
    // A client that ends its side mid-body has nobody left to answer: Node closes such a connection
    // (a chunked body cut short) without a response, which is allowed.
    return { kind: 'bad-headers', method: 'POST', path, headers: {}, raw, halfClose, ...(halfClose ? { mayCloseUnanswered: true } : {}), what };
  }

  // ---- random routes ---------------------------------------------------------------------------

  private randomSubject(): string {
    return this.pick([
      this.schemaSubject(),
      `cfg-${this.int(CONFIG_SUBJECTS)}`,
      percentEncode(this.unicodeText()) || 'empty',
      'nobody',
      '%2F..%2F',
      '..',
      '%00',
      '%ff%fe',
      '%',
      '%E0%A4%A',
      'a'.repeat(this.pick([200, 16_000, 17_000])),
      '%C0%AF',
      'sub%20ject',
      ':subject',
    ]);
  }

  private randomRouteRequest(): FuzzRequest {
    const subject = this.randomSubject();
    const version = this.pick(['1', '2', 'latest', '-1', '0', '-2', 'abc', '99999999999', '2147483648', '1e3', '%201', '1.0', '']);
    const id = this.pick(['1', '2', '3', '0', '-1', '2147483648', '99999999999999999999', 'x', '1.5', '']);
    const query = this.pick(['', '?deleted=true', '?deleted=maybe', '?permanent=true', '?permanent=TRUE&permanent=false', '?verbose=true', '?defaultToGlobal=true', '?fetchMaxId=true', '?%ff=%fe', '?a=' + 'q'.repeat(5000)]);
    const path = this.pick([
      `/subjects/${subject}/versions`,
      `/subjects/${subject}/versions/${version}`,
      `/subjects/${subject}/versions/${version}/schema`,
      `/subjects/${subject}/versions/${version}/referencedby`,
      `/subjects/${subject}`,
      '/subjects',
      `/schemas/ids/${id}`,
      `/schemas/ids/${id}/schema`,
      `/schemas/ids/${id}/subjects`,
      `/schemas/ids/${id}/versions`,
      '/schemas/types',
      `/config/${subject}`,
      `/mode/${subject}`,
      '/mode',
      '/config',
      '/',
      `/compatibility/subjects/${subject}/versions/${version}`,
      '/v1/metadata/id',
      '/contexts',
      '//subjects',
      '/subjects/',
      `/${'x/'.repeat(this.int(50))}`,
    ]);
    let method = this.pick(['GET', 'GET', 'GET', 'POST', 'PUT', 'DELETE', 'DELETE', 'PATCH', 'HEAD', 'OPTIONS']);
    // The schema chains rely on their level: the global one and the fz subjects' are never changed.
    if ((path === '/config' || path.startsWith('/config/fz-')) && (method === 'PUT' || method === 'DELETE')) method = 'GET';
    const full = `${path}${query}`;
    const body = method === 'POST' || method === 'PUT' || method === 'PATCH' ? this.schemaBody(JSON.stringify(this.schema(0, []))) : undefined;
    // A permanent delete of a whole fz subject is allowed: its chain starts again.
    return this.json(method, full, body, 'random-route', `${method} ${full.slice(0, 80)}`);
  }
}
