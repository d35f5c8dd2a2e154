/**
 * A record's event time: the load's timeField (a dotted path into the decoded record, holding ms
 * since the epoch as int or long), or else the Kafka record timestamp. Never the wall clock: a
 * record without a usable event time is quarantined, so where a record lands depends only on it.
 */
import type { Type, types } from 'avsc';
import { etlError } from '../errors.js';
import type { ReaderSchema } from '../load-types.js';

const NUMERIC = new Set(['int', 'long']);
/** 9999-12-31T23:59:59.999Z: later times have no four-digit year folder. */
const LATEST_EVENT_TIME_MS = 253_402_300_799_999;

function fieldTypeAt(type: Type, path: readonly string[]): Type | undefined {
  let current: Type = type;
  for (const name of path) {
    const record = current.typeName === 'record' ? (current as types.RecordType) : undefined;
    const field = record?.fields.find((candidate) => candidate.name === name);
    if (field === undefined) return undefined;
    current = field.type;
  }
  return current;
}

function holdsMillis(type: Type): boolean {
  if (NUMERIC.has(type.typeName)) return true;
  if (type.typeName === 'union:unwrapped' || type.typeName === 'union:wrapped') {
    const branches = (type as types.UnwrappedUnionType).types;
    return branches.some((branch) => NUMERIC.has(branch.typeName)) && branches.every((branch) => NUMERIC.has(branch.typeName) || branch.typeName === 'null');
  }
  return false;
}

/** Fails the plan when the reader schema has no int/long field at `timeField`. */
export function checkTimeField(reader: ReaderSchema, topic: string, timeField: string): void {
  const found = fieldTypeAt(reader.schema.type, timeField.split('.'));
  if (found === undefined || !holdsMillis(found)) {
    const what = found === undefined ? 'has no such field' : `has it as ${found.typeName}, not int or long`;
    throw etlError(
      'ETL_SCHEMA_PROBLEM',
      `timeField ${timeField} of the load: the reader schema of topic ${topic} (${reader.ref.subject} version ${reader.ref.version}, id ${reader.ref.id}) ${what}. ` +
        'Name a field holding milliseconds since the epoch (dotted for nested records), or leave timeField out to use the record timestamp',
      { details: { topic, timeField, subject: reader.ref.subject, version: reader.ref.version } },
    );
  }
}

export type EventTime = { readonly ok: true; readonly ms: number } | { readonly ok: false; readonly reason: string };

/** Each timeField's path, split once: the event time is taken for every record. */
const fieldPaths = new Map<string, readonly string[]>();

/** The event time of a decoded record, or why it has none. */
export function eventTimeOf(value: unknown, recordTimestamp: number, timeField: string | undefined): EventTime {
  let time: unknown = recordTimestamp;
  if (timeField !== undefined) {
    let path = fieldPaths.get(timeField);
    if (path === undefined) fieldPaths.set(timeField, (path = timeField.split('.')));
    time = value;
    for (const name of path) {
      time = typeof time === 'object' && time !== null ? (time as Record<string, unknown>)[name] : undefined;
    }
  }
  if (typeof time !== 'number' || !Number.isSafeInteger(time) || time < 0 || time > LATEST_EVENT_TIME_MS) {
    const from = timeField === undefined ? 'the record timestamp' : `field ${timeField}`;
    return { ok: false, reason: `${from} is ${time === undefined ? 'missing' : JSON.stringify(time)}, not a time in ms since the epoch` };
  }
  return { ok: true, ms: time };
}
