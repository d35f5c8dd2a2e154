/**
 * Types that the load file, the planner, the decode loop and the source all speak, kept apart so
 * none of them imports another just for a type (that made an import circle: plan ▸ load-file ▸
 * transform ▸ plan).
 */
import type { Type } from 'avsc';
import type { ParsedSchema } from '../registry/avro-schema.js';

/** A registered schema by subject, version and global id (manifests record the reader schema this way). */
export interface ReaderSchemaRef {
  readonly subject: string;
  readonly version: number;
  readonly id: number;
}

/**
 * How hour folders are named: `hourly/YYYY/MM/DD/HH` (the default), Hive's `dt=YYYY-MM-DD/hr=HH`, or,
 * for `format: iceberg`, the table's `data/_event_time_hour=YYYY-MM-DD-HH` (layout.ts).
 */
export type HourLayout = 'hourly' | 'hive' | 'iceberg';

/** The schema records of a topic are decoded into, as the plan chose it. */
export interface ReaderSchema {
  readonly ref: ReaderSchemaRef;
  /** What records are decoded into. */
  readonly schema: ParsedSchema;
  /** The same schema for the data files: logical types kept as annotations (files/data-files.ts). */
  readonly fileType: Type;
}

/** Which topics a load reads: a list of names, or a whole-name pattern. */
export type TopicSelector =
  | { readonly kind: 'list'; readonly names: readonly string[] }
  | { readonly kind: 'pattern'; readonly pattern: RegExp; readonly source: string };
