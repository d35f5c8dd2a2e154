/**
 * Registry fuzzing (issue #22, hostile input; reliability reference §8.5): a real `tributary
 * registry start` process on a file store takes a stream of seeded hostile requests
 * (test/support/registry-requests.ts: valid and mutated schemas, bad bodies, bad headers on raw
 * sockets, random routes and methods) from a few concurrent clients. Invariants:
 *
 *   - the process never exits, and its peak RSS (the kernel's high-water mark) is reported;
 *   - every answer is a correct success or a Confluent error: JSON `{"error_code": <int>,
 *     "message": <string>}` and nothing else, with a 4xx status (a 5xx is an internal failure);
 *   - an accepted registration is a schema avsc accepts;
 *   - afterwards nothing invalid is stored: every id's schema parses with avsc and with the
 *     registry's own parser to the same fingerprint, no two ids hold one schema, and in every
 *     subject (all under BACKWARD_TRANSITIVE) each live version reads every older live one;
 *   - the official client (@kafkajs/confluent-schema-registry) is served: it registers,
 *     encodes, decodes with a fresh client and finds the id again.
 */
import { SchemaRegistry, SchemaType } from '@kafkajs/confluent-schema-registry';
import avro from 'avsc';
import { createConnection } from 'node:net';
import { parseAvroSchema, type ParsedSchema } from '../../src/registry/avro-schema.js';
import { readerWriterIncompatibilities } from '../../src/registry/compatibility.js';
import { peakResidentBytes, residentBytes, resetPeakResident } from '../support/process-memory.js';
import { RegistryRequestGenerator, REQUEST_KINDS, type FuzzRequest, type RequestKind } from '../support/registry-requests.js';
import { seededRandom } from '../support/seeded-random.js';
import { startRegistryProcess } from './registry-fuzz-process.js';

export interface RegistryFuzzOptions {
  /** A folder for the registry's data and log. */
  readonly folder: string;
  readonly requests: number;
  readonly seed: number;
  /** Requests in flight at once. */
  readonly concurrency?: number;
  readonly say?: (line: string) => void;
}

export interface RegistryFuzzResult {
  readonly requests: number;
  readonly byKind: Readonly<Record<RequestKind, number>>;
  /**
   * Answers by status class: 2xx, 4xx, 5xx; requests without an answer; and oversized bodies whose
   * connection was closed (with a 413 the reset swallowed) before the answer could be read.
   */
  readonly answers: { readonly success: number; readonly clientError: number; readonly serverError: number; readonly none: number; readonly closed: number };
  readonly accepted: number;
  readonly storedSchemas: number;
  readonly subjects: number;
  readonly liveVersions: number;
  readonly pairsChecked: number;
  readonly duplicateIds: number;
  readonly officialClient: boolean;
  readonly rssBeforeBytes: number;
  readonly peakRssBytes: number;
  readonly seconds: number;
  readonly logFile: string;
  readonly violations: readonly string[];
}

interface Answer {
  readonly status: number;
  readonly text: string;
}

const REQUEST_TIMEOUT_MS = 30_000;

export async function runRegistryFuzz(options: RegistryFuzzOptions): Promise<RegistryFuzzResult> {
  const started = Date.now();
  const registry = await startRegistryProcess(options.folder);
  const violations: string[] = [];
  const violation = (text: string): void => {
    if (violations.length < 200) violations.push(text);
  };
  const url = new URL(registry.url);
  const byKind = Object.fromEntries(REQUEST_KINDS.map((kind) => [kind, 0])) as Record<RequestKind, number>;
  const answers = { success: 0, clientError: 0, serverError: 0, none: 0, closed: 0 };
  let accepted = 0;
  const generator = new RegistryRequestGenerator(seededRandom(options.seed));
  const rssBeforeBytes = residentBytes(registry.pid);
  const exactPeak = resetPeakResident(registry.pid);
  let stored = { storedSchemas: 0, subjects: 0, liveVersions: 0, pairsChecked: 0, duplicateIds: 0 };
  let officialClient = false;
  try {
    const setUp = await send(url, { kind: 'valid-schema', method: 'PUT', path: '/config', headers: { 'content-type': 'application/json' }, body: Buffer.from('{"compatibility":"BACKWARD_TRANSITIVE"}'), what: 'set up' });
    if (setUp?.status !== 200) throw new Error(`PUT /config answered ${setUp?.status}: ${setUp?.text}`);
    let next = 0;
    let lastReport = Date.now();
    const worker = async (): Promise<void> => {
      while (next < options.requests && !registry.hasExited()) {
        next += 1;
        const fuzz = generator.next();
        byKind[fuzz.kind] += 1;
        const answer = await send(url, fuzz);
        if (answer === undefined && fuzz.mayCloseUnanswered === true) {
          answers.closed += 1;
          continue;
        }
        if (answer === undefined) {
          answers.none += 1;
          violation(`no answer within ${REQUEST_TIMEOUT_MS / 1000} s to ${fuzz.what}`);
          continue;
        }
        if (answer.status >= 500) answers.serverError += 1;
        else if (answer.status >= 200 && answer.status < 300) answers.success += 1;
        else answers.clientError += 1;
        const problem = checkAnswer(fuzz, answer);
        if (problem !== undefined) violation(`${fuzz.what} (${fuzz.method} ${fuzz.path.slice(0, 80)}): ${problem}`);
        else if (fuzz.registers !== undefined && answer.status === 200) {
          accepted += 1;
          generator.accept(fuzz.registers.subject, fuzz.registers.schema);
        }
        if (Date.now() - lastReport > 10_000) {
          lastReport = Date.now();
          options.say?.(`  ${next} requests, ${accepted} registrations accepted, registry RSS ${mib(residentBytes(registry.pid))}, ${violations.length} violations`);
        }
      }
    };
    await Promise.all(Array.from({ length: options.concurrency ?? 8 }, worker));
    if (registry.hasExited()) violation(`the registry process exited during the run; see ${registry.logFile}`);
    else {
      stored = await checkStoredState(url, violation);
      officialClient = await checkOfficialClient(registry.url, violation);
    }
  } catch (error) {
    await registry.stop();
    throw error;
  }
  const peakRssBytes = Math.max(peakResidentBytes(registry.pid), rssBeforeBytes);
  const code = await registry.stop();
  if (code !== 0) violation(`the registry exited with ${code} on SIGTERM; see ${registry.logFile}`);
  if (!exactPeak) options.say?.('  (peak RSS covers the whole life of the registry: clear_refs refused)');
  return {
    requests: Object.values(byKind).reduce((sum, count) => sum + count, 0),
    byKind,
    answers,
    accepted,
    ...stored,
    officialClient,
    rssBeforeBytes,
    peakRssBytes,
    seconds: Math.round((Date.now() - started) / 1000),
    logFile: registry.logFile,
    violations,
  };
}

// ---- sending ---------------------------------------------------------------------------------

function send(url: URL, fuzz: FuzzRequest): Promise<Answer | undefined> {
  return fuzz.raw === undefined ? sendHttp(url, fuzz) : sendRaw(url, fuzz.raw, fuzz.halfClose === true);
}

/** Through fetch (undici, keep-alive), which reads an early answer such as a 413 even while it still uploads. */
async function sendHttp(url: URL, fuzz: FuzzRequest): Promise<Answer | undefined> {
  try {
    const response = await fetch(`${url.origin}${fuzz.path}`, {
      method: fuzz.method,
      headers: fuzz.headers,
      ...(fuzz.body === undefined ? {} : { body: fuzz.body }),
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
    return { status: response.status, text: await response.text() };
  } catch (error) {
    if (process.env['FUZZ_DEBUG'] !== undefined) console.log(fuzz.what, error, (error as Error).cause);
    return undefined;
  }
}

/**
 * Writes the bytes (and half-closes if asked) and reads the answer until the registry closes the
 * connection (every raw request says `Connection: close`).
 */
function sendRaw(url: URL, bytes: Buffer, halfClose: boolean): Promise<Answer | undefined> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: url.hostname, port: Number(url.port) });
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => socket.destroy(), REQUEST_TIMEOUT_MS);
    socket.on('connect', () => (halfClose ? socket.end(bytes) : socket.write(bytes)));
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(parseRawAnswer(Buffer.concat(chunks)));
    });
  });
}

function parseRawAnswer(bytes: Buffer): Answer | undefined {
  const text = bytes.toString('latin1');
  const end = text.indexOf('\r\n\r\n');
  const status = /^HTTP\/1\.1 (\d{3})/.exec(text)?.[1];
  if (end < 0 || status === undefined) return undefined;
  const head = text.slice(0, end).toLowerCase();
  let body = bytes.subarray(end + 4);
  if (/\r\ntransfer-encoding: chunked/.test(head)) {
    const parts: Buffer[] = [];
    let at = 0;
    for (;;) {
      const lineEnd = body.indexOf('\r\n', at);
      if (lineEnd < 0) break;
      const size = Number.parseInt(body.subarray(at, lineEnd).toString('latin1'), 16);
      if (!Number.isFinite(size) || size === 0) break;
      parts.push(body.subarray(lineEnd + 2, lineEnd + 2 + size));
      at = lineEnd + 2 + size + 2;
    }
    body = Buffer.concat(parts);
  }
  return { status: Number(status), text: body.toString('utf8') };
}

// ---- checking answers ------------------------------------------------------------------------

/** Why an answer is not a correct success or a Confluent error; undefined when it is one. */
export function checkAnswer(fuzz: FuzzRequest, answer: Answer): string | undefined {
  if (answer.status >= 500) return `answered ${answer.status}: ${answer.text.slice(0, 300)}`;
  if (answer.status < 200 || (answer.status >= 300 && answer.status < 400)) return `answered status ${answer.status}`;
  if (fuzz.method === 'HEAD' && answer.text === '') return undefined;
  let json: unknown;
  try {
    json = JSON.parse(answer.text);
  } catch {
    return `answered ${answer.status} with a body that is not JSON: ${answer.text.slice(0, 200)}`;
  }
  if (answer.status >= 400) {
    const body = json as Record<string, unknown>;
    const keys = typeof json === 'object' && json !== null && !Array.isArray(json) ? Object.keys(body).sort().join(',') : '';
    if (keys !== 'error_code,message' || !Number.isInteger(body['error_code']) || typeof body['message'] !== 'string' || body['message'] === '') {
      return `answered ${answer.status} with a body that is not a Confluent error: ${answer.text.slice(0, 200)}`;
    }
    return undefined;
  }
  if (fuzz.registers !== undefined && fuzz.method === 'POST' && /\/versions(\?|$)/.test(fuzz.path)) {
    const id = (json as { id?: unknown }).id;
    if (!Number.isSafeInteger(id) || (id as number) < 1) return `a registration answered ${answer.text.slice(0, 200)}`;
    try {
      avro.Type.forSchema(JSON.parse(fuzz.registers.schema) as avro.Schema, { noAnonymousTypes: true });
    } catch (error) {
      return `accepted a schema avsc refuses (${(error as Error).message}): ${fuzz.registers.schema.slice(0, 200)}`;
    }
  }
  return undefined;
}

// ---- checking what is stored -----------------------------------------------------------------

async function getJson(url: URL, path: string): Promise<{ status: number; json: unknown }> {
  const answer = await sendHttp(url, { kind: 'random-route', method: 'GET', path, headers: {}, what: `GET ${path}` });
  if (answer === undefined) throw new Error(`no answer to GET ${path}`);
  return { status: answer.status, json: JSON.parse(answer.text) as unknown };
}

function parseStored(text: string, where: string, violation: (text: string) => void): ParsedSchema | undefined {
  try {
    avro.Type.forSchema(JSON.parse(text) as avro.Schema);
  } catch (error) {
    violation(`${where} holds a schema avsc refuses (${(error as Error).message}): ${text.slice(0, 200)}`);
    return undefined;
  }
  try {
    return parseAvroSchema(text);
  } catch (error) {
    violation(`${where} holds a schema the registry's parser refuses (${(error as Error).message}): ${text.slice(0, 200)}`);
    return undefined;
  }
}

async function checkStoredState(url: URL, violation: (text: string) => void): Promise<{ storedSchemas: number; subjects: number; liveVersions: number; pairsChecked: number; duplicateIds: number }> {
  const first = await getJson(url, '/schemas/ids/1?fetchMaxId=true');
  const maxId = first.status === 200 ? ((first.json as { maxId?: number }).maxId ?? 1) : 0;
  const byFingerprint = new Map<string, number>();
  const byId = new Map<number, ParsedSchema>();
  let storedSchemas = 0;
  let duplicateIds = 0;
  for (let id = 1; id <= maxId; id += 1) {
    const answer = await getJson(url, `/schemas/ids/${id}`);
    if (answer.status !== 200) continue;
    storedSchemas += 1;
    const parsed = parseStored((answer.json as { schema: string }).schema, `id ${id}`, violation);
    if (parsed === undefined) continue;
    byId.set(id, parsed);
    const earlier = byFingerprint.get(parsed.fingerprint);
    if (earlier !== undefined) {
      duplicateIds += 1;
      violation(`ids ${earlier} and ${id} hold the same schema`);
    } else byFingerprint.set(parsed.fingerprint, id);
  }
  const subjects = (await getJson(url, '/subjects')).json as string[];
  let liveVersions = 0;
  let pairsChecked = 0;
  for (const subject of subjects) {
    const versions = (await getJson(url, `/subjects/${encodeURIComponent(subject)}/versions`)).json as number[];
    const schemas: { version: number; id: number; parsed: ParsedSchema }[] = [];
    for (const version of versions) {
      const answer = await getJson(url, `/subjects/${encodeURIComponent(subject)}/versions/${version}`);
      if (answer.status !== 200) {
        violation(`${subject} version ${version} is listed but answers ${answer.status}`);
        continue;
      }
      const body = answer.json as { id: number; schema: string };
      const parsed = parseStored(body.schema, `${subject} version ${version}`, violation);
      if (parsed === undefined) continue;
      if (byId.get(body.id)?.fingerprint !== parsed.fingerprint) violation(`${subject} version ${version} names id ${body.id}, which holds another schema`);
      schemas.push({ version, id: body.id, parsed });
    }
    liveVersions += schemas.length;
    // BACKWARD_TRANSITIVE: each version reads every older live one.
    for (let newer = 1; newer < schemas.length; newer += 1) {
      for (let older = 0; older < newer; older += 1) {
        pairsChecked += 1;
        const reader = schemas[newer]!;
        const writer = schemas[older]!;
        const problems = readerWriterIncompatibilities(reader.parsed.type, writer.parsed.type);
        if (problems.length > 0) violation(`${subject}: version ${reader.version} cannot read version ${writer.version}: ${problems[0]?.message ?? ''}`);
        try {
          // As the deserializer resolves: names compared without namespaces, as Avro Java's check does.
          reader.parsed.type.createResolver(writer.parsed.type, { ignoreNamespaces: true });
        } catch (error) {
          violation(`${subject}: avsc cannot resolve version ${writer.version} into version ${reader.version}: ${(error as Error).message}`);
        }
      }
    }
  }
  return { storedSchemas, subjects: subjects.length, liveVersions, pairsChecked, duplicateIds };
}

async function checkOfficialClient(base: string, violation: (text: string) => void): Promise<boolean> {
  try {
    const client = new SchemaRegistry({ host: base });
    const schema = JSON.stringify({ type: 'record', name: 'AfterFuzz', namespace: 'chaos', fields: [{ name: 'n', type: 'long' }, { name: 's', type: 'string' }] });
    const { id } = await client.register({ type: SchemaType.AVRO, schema }, { subject: 'after-fuzz-value' });
    const encoded = await client.encode(id, { n: 42, s: 'ok' });
    const fresh = new SchemaRegistry({ host: base });
    const decoded = (await fresh.decode(encoded)) as { n: number; s: string };
    if (decoded.n !== 42 || decoded.s !== 'ok') throw new Error(`decoded ${JSON.stringify(decoded)}`);
    if ((await fresh.getLatestSchemaId('after-fuzz-value')) !== id) throw new Error('getLatestSchemaId named another id');
    if ((await fresh.getRegistryIdBySchema('after-fuzz-value', { type: SchemaType.AVRO, schema })) !== id) throw new Error('getRegistryIdBySchema named another id');
    return true;
  } catch (error) {
    violation(`the official client was not served after the run: ${(error as Error).message}`);
    return false;
  }
}

const mib = (bytes: number): string => `${(bytes / (1024 * 1024)).toFixed(0)} MiB`;

export function formatRegistryFuzzLine(result: RegistryFuzzResult): string {
  const kinds = REQUEST_KINDS.map((kind) => `${kind} ${result.byKind[kind]}`).join(', ');
  const { success, clientError, serverError, none, closed } = result.answers;
  return (
    `fuzz-registry: ${result.requests} hostile requests (${kinds}); answers 2xx ${success}, 4xx ${clientError}, 5xx ${serverError}, none ${none}, closed unanswered (oversized or cut-short bodies) ${closed}; ` +
    `${result.accepted} registrations accepted, ${result.storedSchemas} schemas stored (all checked with avsc), ${result.subjects} subjects with ${result.liveVersions} live versions ` +
    `(${result.pairsChecked} version pairs compatible), ${result.duplicateIds} duplicate ids, official client ${result.officialClient ? 'served' : 'NOT served'}; ` +
    `registry RSS ${mib(result.rssBeforeBytes)} before, peak ${mib(result.peakRssBytes)} (+${mib(result.peakRssBytes - result.rssBeforeBytes)}); ${result.violations.length} violations in ${result.seconds} s`
  );
}
