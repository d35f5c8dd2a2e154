/**
 * A load file: one YAML document under jobs/ that declares a load (jobs/page-views.yaml is the
 * annotated example). Every field is checked here; a bad file fails with CONFIG_INVALID naming
 * the file and each offending field, and nothing runs.
 *
 *   name: page-views                 # [A-Za-z0-9._-], names the lease and _etl/<name>/ in the warehouse
 *   source: { bootstrap: [h:p, …] }  # brokers of the (offline) cluster to read
 *     security: { security.protocol: SASL_SSL, sasl.mechanism: SCRAM-SHA-512, sasl.username: etl,
 *                 sasl.password.file: etl.password, ssl.truststore.location: ca.pem }
 *                                    # optional: how to reach them (client security properties,
 *                                    # src/client/security-config.ts); relative paths from this file's
 *                                    # folder; the password from that file or $TRIBUTARY_SASL_PASSWORD
 *   topics: [page-views]             # or topicPattern: '^page-.*$' (a whole-name regex); not both
 *   registry: http://h:p             # schema registry; topic T is read as the latest T-value
 *   registryConfig:                  # optional: Confluent's registry client properties (registry/client-config.ts),
 *     basic.auth.user.info.file: registry-user   # relative paths from this file's folder; the secret itself
 *     schema.registry.ssl.truststore.location: ca.pem   # never inline (job data goes through Redis)
 *   warehouse: { url: webhdfs://h:p/base?user=etl, root: warehouse }   # root: folder inside the URL's
 *   layout: hourly                   # hourly (<topic>/hourly/YYYY/MM/DD/HH) | hive (<topic>/dt=YYYY-MM-DD/hr=HH);
 *                                    # fixed once the load has committed (layout.ts); not with iceberg
 *   format: avro                     # avro | parquet | iceberg (an Iceberg v2 table per topic, Parquet data files)
 *   iceberg: { fileSystem: hdfs://nn:8020 }   # optional, format iceberg: the URI engines reach a webhdfs
 *                                    # warehouse at, written into the table metadata (default webhdfs://…)
 *     catalog:                       # optional: keep the tables in an Iceberg REST catalog instead of
 *                                    # v<N>.metadata.json files (iceberg/load-catalog.ts); files stay in the warehouse
 *       type: rest
 *       uri: https://catalog:8181    # the catalog's base URI (requests go to <uri>/v1/…)
 *       warehouse: analytics         # optional: the catalog's warehouse name (GET /v1/config?warehouse=)
 *       namespace: [db, events]      # or 'db.events'
 *       tables: { page-views: page_views }   # optional; default: the topic with characters other than
 *                                    # A-Z a-z 0-9 _ made `_`; the dead-letter table is <load>_dead_letters
 *       credential.file: catalog.credential   # optional: OAuth2 client_id:client_secret (first line), else
 *                                    # $TRIBUTARY_ICEBERG_CREDENTIAL; or token.file (a bearer token), else
 *                                    # $TRIBUTARY_ICEBERG_TOKEN; never inline (job data goes through Redis)
 *       scope: catalog               # optional: the OAuth2 scope (default catalog)
 *       ssl.ca.location: ca.pem      # optional: PEM CA certificates for an https catalog
 *                                    # (relative paths from this file's folder)
 *     maintenance:                   # optional: a scheduled maintenance job of the load's tables (BullMQ)
 *       schedule: '30 2 * * *'       # cron (UTC): compaction, then snapshot expiry, then orphan removal
 *       compaction: { targetFileBytes: 134217728, minInputFiles: 5 }   # or false; these are the defaults
 *       expiry: { olderThan: 5d, retainLast: 1 }                       # or false; Iceberg's defaults
 *       orphans: { olderThan: 3d }                                     # or false; Spark's default
 *   codec: deflate                   # as data-files.ts allows for the format
 *   timeField: header.time           # optional: record field (dotted) with event time in ms; else record timestamp
 *   maxRecordsPerRun: 1000000        # optional, per partition and run; absent: up to the high watermark
 *   maxRecordsPerTask: 1000000       # a range is cut into slices of this many offsets: a task and files each
 *   maxFileBytes: 536870912          # optional: a data file rolls to part .1, .2 … at this size
 *   memoryBudget: 134217728          # bytes the open data files of a loader process may hold in memory
 *                                    # (default 16 MiB); past it they wait in local spill files
 *   rowGroupBytes: 134217728         # parquet: a row group closes once its rows' Avro bytes reach this
 *                                    # (default 128 MiB, parquet.block.size), at most memoryBudget / 8
 *   parquetEncoderThread: false      # parquet: encode row groups on a worker thread, so a second core
 *                                    # encodes while this one decodes (faster; ~80–100 MB more RSS)
 *   quarantine: { maxRecords: 0 }    # undecodable records a run may set aside; more fails the run
 *   latenessHorizon: 2h              # ms|s|m|h|d: how long an hour stays open for late records
 *   schedule: '5 * * * *'            # cron (5 or 6 fields), used by the scheduler (#10)
 *   transform: { fields: { out: path | { const: v } } }   # optional: the records written (transform.ts)
 *   audit: { topic: _audit, bootstrap: [h:p] }   # optional: publish the LOADER audit tier and write
 *                                    # hour _COMPLETE markers; topic defaults to _audit, bootstrap to
 *                                    # source.bootstrap; needs timeField (the creation time); its own
 *                                    # `security` block, else source.security when bootstrap is left out
 *   hive: { database: default, table: page_views, fileSystem: hdfs://nn:8020 }   # optional: what
 *                                    # `tributary etl ddl` names (tables/hive-tables.ts); `table` for a
 *                                    # one-topic list, else `tables: { <topic>: <table> }`; default table
 *                                    # name: the topic with characters other than A-Z a-z 0-9 _ made `_`
 */
import { readFile } from 'node:fs/promises';
import { DEFAULT_ROW_GROUP_BYTES } from './files/parquet-file.js';
import { DEFAULT_MEMORY_BUDGET_BYTES } from './load/memory-budget.js';
import { dirname, resolve } from 'node:path';
import { parse as parseYaml, YAMLParseError } from 'yaml';
import { z } from 'zod';
import { hostPortSchema, parseConfig } from '../common/config.js';
import { AUDIT_TOPIC } from '../audit/audit-count.js';
import { REGISTRY_CLIENT_PROPERTIES } from '../registry/client-config.js';
import { TributaryError } from '../common/errors.js';
import { parseClientSecurity, securityBlockSchema, type ClientSecurity, type ClientSecurityProperties } from '../client/security-config.js';
import { validateCodec, type DataFileCodec, type DataFileFormat } from './files/data-files.js';
import { transformSchema, type TransformDefinition } from './records/transform.js';
import type { HourLayout, TopicSelector } from './load-types.js';
import { parseWarehousePath } from './warehouse/paths.js';

export type { TopicSelector } from './load-types.js';

export interface LoadDefinition {
  /** Absolute path of the load file, for messages. */
  readonly file: string;
  readonly name: string;
  /** `security`: the client security properties as written (checked, not yet read: see loadClientSecurity). */
  readonly source: { readonly bootstrap: readonly string[]; readonly security?: ClientSecurityProperties };
  readonly topics: TopicSelector;
  readonly registry: string;
  /** Confluent-named registry client properties (registry/client-config.ts); absent: none. */
  readonly registryConfig?: Readonly<Record<string, string>>;
  /** `url` as written; a relative local path is taken from the load file's folder (`baseDirectory`). */
  readonly warehouse: { readonly url: string; readonly root: string; readonly baseDirectory: string };
  readonly format: DataFileFormat;
  readonly codec: DataFileCodec;
  readonly timeField?: string;
  /** Per partition and run; absent: read to the high watermark at plan time. */
  readonly maxRecordsPerRun?: number;
  /** A partition's range is cut into slices of this many offsets: a task each, files of their own (load/slices.ts). */
  readonly maxRecordsPerTask: number;
  /** A data file rolls to its next part at this size (load/slice-writer.ts); absent: never. */
  readonly maxFileBytes?: number;
  /** Bytes the open data files of a process may hold in memory (load/memory-budget.ts). */
  readonly memoryBudget: number;
  /** Parquet: a row group closes once its rows' Avro bytes reach this, at most memoryBudget / 8. */
  readonly rowGroupBytes: number;
  /** Parquet: row groups are encoded on a worker thread (files/parquet-encoder.ts). */
  readonly parquetEncoderThread: boolean;
  readonly quarantine: { readonly maxRecords: number };
  readonly latenessHorizonMs: number;
  readonly schedule?: string;
  /** The records written are built from these fields (transform.ts); absent: as decoded. */
  readonly transform?: TransformDefinition;
  /** Present: runs count their commits at the LOADER audit tier and write hour markers (audit-tier.ts, hour-completeness.ts). */
  readonly audit?: LoadAuditSettings;
  /** How hour folders are named (layout.ts); `hourly` unless the file says otherwise, `iceberg` for Iceberg tables. */
  readonly layout: HourLayout;
  /** Present for `format: iceberg` (then `format` is parquet, the tables' data files, and `layout` is iceberg). */
  readonly iceberg?: IcebergTableSettings;
  /** What `tributary etl ddl` names the Hive tables (absent: every default). */
  readonly hive?: HiveTableSettings;
}

export interface IcebergTableSettings {
  /** `hdfs://NAMENODE:PORT` (scheme and authority) that engines reach a webhdfs warehouse at; absent: the webhdfs:// URI itself. */
  readonly fileSystem?: string;
  /** The REST catalog that keeps the tables' metadata (absent: file-system tables, v<N>.metadata.json). */
  readonly catalog?: IcebergCatalogSettings;
  /** A scheduled maintenance job of the load's tables. */
  readonly maintenance?: IcebergMaintenanceSettings;
}

/** An Iceberg REST catalog of a load's tables: where it is, which namespace, and where its secrets are (never the secrets). */
export interface IcebergCatalogSettings {
  readonly type: 'rest';
  /** The catalog's base URI, http(s)://host[:port][/path]. */
  readonly uri: string;
  /** The catalog's warehouse name, sent to GET /v1/config. */
  readonly warehouse?: string;
  readonly namespace: readonly string[];
  /** Table names by topic, as the file gives them; other topics get defaultCatalogTableName. */
  readonly tables: Readonly<Record<string, string>>;
  /** Absolute path of the file holding the OAuth2 client credential `client_id:client_secret`. */
  readonly credentialFile?: string;
  /** Absolute path of the file holding a bearer token. */
  readonly tokenFile?: string;
  readonly scope?: string;
  /** Absolute path of PEM CA certificates for an https catalog. */
  readonly caFile?: string;
}

/** A catalog table or namespace level name as this loader makes them. */
export const CATALOG_NAME_PATTERN = /^[A-Za-z0-9_][A-Za-z0-9_-]{0,254}$/;
const catalogName = z.string().regex(CATALOG_NAME_PATTERN, 'a catalog name is 1–255 characters of A–Z, a–z, 0–9, "_" and "-", not starting with "-"');

/** What a maintenance job of an Iceberg load does; a step left out (false) is not done. */
export interface IcebergMaintenanceSettings {
  /** Cron (UTC) of the maintenance job. */
  readonly schedule: string;
  readonly compaction?: { readonly targetFileBytes: number; readonly minInputFiles: number };
  readonly expiry?: { readonly olderThanMs: number; readonly retainLast: number };
  readonly orphans?: { readonly olderThanMs: number };
}

export const DEFAULT_EXPIRY = { olderThanMs: 5 * 86_400_000, retainLast: 1 } as const;
export const DEFAULT_ORPHAN_AGE_MS = 3 * 86_400_000;
/** Orphan removal younger than this could delete the files of a commit in progress. */
const MIN_ORPHAN_AGE_MS = 3_600_000;

export interface HiveTableSettings {
  readonly database: string;
  /** Table names by topic, as the file gives them; other topics get defaultHiveTableName. */
  readonly tables: Readonly<Record<string, string>>;
  /** `hdfs://NAMENODE:PORT` (the RPC address Hive reaches HDFS at) for LOCATIONs of webhdfs warehouses. */
  readonly fileSystem?: string;
}

export interface LoadAuditSettings {
  /** The audit topic on that cluster (AUDIT_TOPIC by default). */
  readonly topic: string;
  /** The cluster whose audit topic gets the LOADER counts and holds the PRODUCER counts (source.bootstrap by default). */
  readonly bootstrap: readonly string[];
  /** How to reach that cluster: the section's own security block, or source.security when it is the source cluster. */
  readonly security?: ClientSecurityProperties;
}

export const DEFAULT_MAX_RECORDS_PER_TASK = 1_000_000;
const MIN_FILE_BYTES = 1024 * 1024;
const MIN_MEMORY_BUDGET = 16 * 1024 * 1024;
const MIN_ROW_GROUP_BYTES = 64 * 1024;
export const LOAD_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;
/** Kafka's legal topic names; `+` is not among them, which keeps data file names unambiguous. */
export const TOPIC_NAME_PATTERN = /^[A-Za-z0-9._-]{1,249}$/;
const FIELD_PATH_PATTERN = /^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$/;
const DURATION_UNITS_MS: Readonly<Record<string, number>> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const CRON_FIELD = /^[0-9A-Za-z*?/,#LW-]+$/;
/** What the Hive metastore accepts as a database or table name (it folds case; so do we). */
export const HIVE_NAME_PATTERN = /^[A-Za-z0-9_]{1,128}$/;
const hiveName = z.string().regex(HIVE_NAME_PATTERN, 'a Hive name is 1–128 characters of A–Z, a–z, 0–9 and "_"');

const topicName = z
  .string()
  .regex(TOPIC_NAME_PATTERN, 'a topic name is 1–249 characters of A–Z, a–z, 0–9, ".", "_" and "-"')
  .refine((name) => name !== '.' && name !== '..', 'a topic may not be named "." or ".."');

const durationSchema = z.string().transform((text, context) => {
  const match = /^(\d+)(ms|s|m|h|d)$/.exec(text.trim());
  const factor = match === null ? undefined : DURATION_UNITS_MS[match[2] ?? ''];
  if (match === null || factor === undefined) {
    context.addIssue({ code: 'custom', message: `"${text}" is not a duration: write a whole number and a unit, e.g. 90m, 2h, 1d (units ms, s, m, h, d)` });
    return z.NEVER;
  }
  return Number(match[1]) * factor;
});

const cronSchema = z.string().refine((text) => {
  const fields = text.trim().split(/\s+/);
  return (fields.length === 5 || fields.length === 6) && fields.every((field) => CRON_FIELD.test(field));
}, 'expected a cron expression of 5 fields (minute hour day-of-month month day-of-week) or 6 (seconds first), e.g. "5 * * * *"');

const loadFileSchema = z
  .strictObject({
    name: z.string().regex(LOAD_NAME_PATTERN, 'a load name is 1–100 characters of A–Z, a–z, 0–9, ".", "_" and "-", starting with a letter or digit'),
    source: z.strictObject({
      bootstrap: z.preprocess(
        (value) => (typeof value === 'string' ? value.split(',').map((part) => part.trim()) : value),
        z.array(hostPortSchema).min(1, 'name at least one broker as HOST:PORT'),
      ),
      security: securityBlockSchema.optional(),
    }),
    topics: z.array(topicName).min(1, 'list at least one topic, or use topicPattern instead').optional(),
    topicPattern: z
      .string()
      .min(1)
      .refine((text) => {
        try {
          new RegExp(text);
          return true;
        } catch {
          return false;
        }
      }, 'not a valid regular expression')
      .optional(),
    registry: z.url({ protocol: /^https?$/, error: 'expected the registry URL, e.g. http://127.0.0.1:8081' }),
    registryConfig: z
      .partialRecord(z.enum(REGISTRY_CLIENT_PROPERTIES), z.union([z.string(), z.number(), z.boolean()]).transform(String))
      .refine((config) => config['basic.auth.user.info'] === undefined, {
        message: 'basic.auth.user.info would put the password in the load file (and in every job sent through Redis): use basic.auth.user.info.file or TRIBUTARY_REGISTRY_USER_INFO',
      })
      .optional(),
    warehouse: z.strictObject({
      url: z.string().min(1, 'expected webhdfs://HOST[:PORT][/BASE][?user=NAME], file:///PATH or a folder'),
      root: z.string().default(''),
    }),
    format: z.enum(['avro', 'parquet', 'iceberg']),
    codec: z.enum(['null', 'deflate', 'snappy', 'zstd', 'gzip']),
    timeField: z.string().regex(FIELD_PATH_PATTERN, 'expected a field name, or a dotted path into nested records such as header.time').optional(),
    maxRecordsPerRun: z.number().int().positive().max(Number.MAX_SAFE_INTEGER).optional(),
    maxRecordsPerTask: z.number().int().positive().max(Number.MAX_SAFE_INTEGER).default(DEFAULT_MAX_RECORDS_PER_TASK),
    maxFileBytes: z.number().int().min(MIN_FILE_BYTES, `files smaller than ${MIN_FILE_BYTES} bytes (1 MiB) would swamp HDFS with small files`).max(Number.MAX_SAFE_INTEGER).optional(),
    memoryBudget: z
      .number()
      .int()
      .min(MIN_MEMORY_BUDGET, `a memory budget below ${MIN_MEMORY_BUDGET} bytes (16 MiB) would spill nearly every byte to disk`)
      .max(Number.MAX_SAFE_INTEGER)
      .default(DEFAULT_MEMORY_BUDGET_BYTES),
    rowGroupBytes: z.number().int().min(MIN_ROW_GROUP_BYTES, `row groups below ${MIN_ROW_GROUP_BYTES} bytes (64 KiB) make Parquet files mostly metadata`).max(Number.MAX_SAFE_INTEGER).default(DEFAULT_ROW_GROUP_BYTES),
    parquetEncoderThread: z.boolean().default(false),
    quarantine: z.strictObject({ maxRecords: z.number().int().nonnegative() }).default({ maxRecords: 0 }),
    latenessHorizon: durationSchema.default(2 * 3_600_000), // 2h
    schedule: cronSchema.optional(),
    transform: transformSchema.optional(),
    audit: z
      .strictObject({
        topic: topicName.default(AUDIT_TOPIC),
        bootstrap: z
          .preprocess(
            (value) => (typeof value === 'string' ? value.split(',').map((part) => part.trim()) : value),
            z.array(hostPortSchema).min(1, 'name at least one broker as HOST:PORT, or leave bootstrap out to use source.bootstrap'),
          )
          .optional(),
        security: securityBlockSchema.optional(),
      })
      .optional(),
    layout: z.enum(['hourly', 'hive'], { error: 'expected hourly (<topic>/hourly/YYYY/MM/DD/HH) or hive (<topic>/dt=YYYY-MM-DD/hr=HH)' }).optional(),
    iceberg: z
      .strictObject({
        fileSystem: z
          .string()
          .regex(/^[A-Za-z][A-Za-z0-9+.-]*:\/\/[^/?#\s]+$/, 'expected the file system URI engines reach the warehouse at, scheme and authority only, e.g. hdfs://namenode:8020')
          .optional(),
        catalog: z
          .strictObject({
            type: z.literal('rest', { error: 'expected rest (an Iceberg REST catalog); the other catalog kinds are not supported' }),
            uri: z.url({ protocol: /^https?$/, error: 'expected the catalog\'s base URI, e.g. https://catalog:8181 (requests go to <uri>/v1/…)' }),
            warehouse: z.string().min(1, 'is empty; name the catalog\'s warehouse, or leave warehouse out').optional(),
            namespace: z.preprocess((value) => (typeof value === 'string' ? value.split('.') : value), z.array(catalogName).min(1, 'name at least one namespace level, e.g. [db] or db.events')),
            tables: z.record(topicName, catalogName).optional(),
            credential: z.unknown().optional(),
            token: z.unknown().optional(),
            'credential.file': z.string().min(1, 'is empty; name the file holding client_id:client_secret').optional(),
            'token.file': z.string().min(1, 'is empty; name the file holding the token').optional(),
            scope: z.string().min(1, 'is empty; leave scope out for the default (catalog)').optional(),
            'ssl.ca.location': z.string().min(1, 'is empty; name a PEM file of CA certificates').optional(),
          })
          .superRefine((catalog, context) => {
            for (const key of ['credential', 'token'] as const) {
              if (catalog[key] !== undefined) {
                context.addIssue({
                  code: 'custom',
                  path: [key],
                  message: `${key} would put the secret in the load file (and in every job sent through Redis): use ${key}.file or ${key === 'credential' ? 'TRIBUTARY_ICEBERG_CREDENTIAL' : 'TRIBUTARY_ICEBERG_TOKEN'}`,
                });
              }
            }
            if (catalog['credential.file'] !== undefined && catalog['token.file'] !== undefined) {
              context.addIssue({ code: 'custom', path: ['token.file'], message: 'give credential.file (exchanged for tokens) or token.file, not both' });
            }
          })
          .optional(),
        maintenance: z
          .strictObject({
            schedule: cronSchema,
            compaction: z
              .union([
                z.literal(false),
                z.strictObject({
                  targetFileBytes: z.number().int().min(MIN_FILE_BYTES, `a target below ${MIN_FILE_BYTES} bytes (1 MiB) would leave small files small`).max(Number.MAX_SAFE_INTEGER).default(128 * 1024 * 1024),
                  minInputFiles: z.number().int().min(2, 'compacting fewer than 2 files rewrites a file as itself').default(5),
                }),
              ])
              .default({ targetFileBytes: 128 * 1024 * 1024, minInputFiles: 5 }),
            expiry: z
              .union([z.literal(false), z.strictObject({ olderThan: durationSchema.default(DEFAULT_EXPIRY.olderThanMs), retainLast: z.number().int().min(1, 'keep at least the current snapshot').default(DEFAULT_EXPIRY.retainLast) })])
              .default({ olderThan: DEFAULT_EXPIRY.olderThanMs, retainLast: DEFAULT_EXPIRY.retainLast }),
            orphans: z
              .union([
                z.literal(false),
                z.strictObject({
                  olderThan: durationSchema
                    .refine((ms) => ms >= MIN_ORPHAN_AGE_MS, 'files younger than 1h may belong to a commit in progress: give at least 1h (the default is 3d)')
                    .default(DEFAULT_ORPHAN_AGE_MS),
                }),
              ])
              .default({ olderThan: DEFAULT_ORPHAN_AGE_MS }),
          })
          .optional(),
      })
      .optional(),
    hive: z
      .strictObject({
        database: hiveName.default('default'),
        table: hiveName.optional(),
        tables: z.record(topicName, hiveName).optional(),
        fileSystem: z
          .string()
          .regex(/^[A-Za-z][A-Za-z0-9+.-]*:\/\/[^/?#\s]+$/, 'expected the file system URI Hive reaches the warehouse at, scheme and authority only, e.g. hdfs://namenode:8020')
          .optional(),
      })
      .optional(),
  })
  .superRefine((load, context) => {
    if ((load.topics === undefined) === (load.topicPattern === undefined)) {
      context.addIssue({ code: 'custom', path: ['topics'], message: 'give exactly one of topics (a list) or topicPattern (a regex)' });
    }
    try {
      parseWarehousePath(load.warehouse.root, 'read load file', 'warehouse.root');
    } catch (error) {
      context.addIssue({ code: 'custom', path: ['warehouse', 'root'], message: (error as Error).message });
    }
    if (load.audit !== undefined && load.timeField === undefined) {
      context.addIssue({
        code: 'custom',
        path: ['audit'],
        message: 'the LOADER audit tier counts records by creation time, which the data files hold only in a record field: set timeField (e.g. header.time) or remove audit',
      });
    }
    if (load.hive?.table !== undefined && (load.topics?.length !== 1 || load.hive.tables !== undefined)) {
      context.addIssue({
        code: 'custom',
        path: ['hive', 'table'],
        message: 'table names the table of a load with one topic (a list of one); with several topics or a topicPattern write tables: { <topic>: <table>, … }',
      });
    }
    for (const topic of Object.keys(load.hive?.tables ?? {})) {
      if (load.topics !== undefined && !load.topics.includes(topic)) {
        context.addIssue({ code: 'custom', path: ['hive', 'tables', topic], message: `topic ${topic} is not one of the load's topics (${load.topics.join(', ')})` });
      }
    }
    if (load.format === 'iceberg' && load.layout !== undefined) {
      context.addIssue({ code: 'custom', path: ['layout'], message: 'an Iceberg table lays out its own folders (data/_event_time_hour=…, metadata/): leave layout out with format iceberg' });
    }
    for (const topic of Object.keys(load.iceberg?.catalog?.tables ?? {})) {
      if (load.topics !== undefined && !load.topics.includes(topic)) {
        context.addIssue({ code: 'custom', path: ['iceberg', 'catalog', 'tables', topic], message: `topic ${topic} is not one of the load's topics (${load.topics.join(', ')})` });
      }
    }
    if (load.format !== 'iceberg' && load.iceberg !== undefined) {
      context.addIssue({ code: 'custom', path: ['iceberg'], message: 'the iceberg section applies to format iceberg only' });
    }
    try {
      validateCodec(load.format === 'iceberg' ? 'parquet' : load.format, load.codec);
    } catch (error) {
      context.addIssue({ code: 'custom', path: ['codec'], message: (error as Error).message });
    }
  });

/** Reads and checks a load file. */
export async function readLoadFile(file: string): Promise<LoadDefinition> {
  const path = resolve(file);
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new TributaryError({
      code: 'CONFIG_INVALID',
      message: `cannot read load file ${path}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}. Pass --load with the path of a load YAML file (see jobs/page-views.yaml)`,
      cause: error,
      details: { source: path },
    });
  }
  return parseLoadFile(text, path);
}

/** Checks the text of a load file; `file` names it in messages and anchors relative local warehouse paths. */
export function parseLoadFile(text: string, file: string): LoadDefinition {
  let document: unknown;
  try {
    document = parseYaml(text);
  } catch (error) {
    const where = error instanceof YAMLParseError && error.linePos !== undefined ? ` at line ${error.linePos[0].line}, column ${error.linePos[0].col}` : '';
    throw new TributaryError({
      code: 'CONFIG_INVALID',
      message: `load file ${file} is not valid YAML${where}: ${(error as Error).message.split('\n')[0] ?? ''}. Fix the syntax and try again.`,
      cause: error,
      details: { source: file },
    });
  }
  const parsed = parseConfig(loadFileSchema, document, `load file ${file}`);
  const topics: TopicSelector =
    parsed.topics !== undefined
      ? { kind: 'list', names: [...new Set(parsed.topics)] }
      : { kind: 'pattern', pattern: new RegExp(`^(?:${parsed.topicPattern ?? ''})$`), source: parsed.topicPattern ?? '' };
  return {
    file,
    name: parsed.name,
    source: { bootstrap: parsed.source.bootstrap, ...(parsed.source.security === undefined ? {} : { security: parsed.source.security }) },
    topics,
    registry: parsed.registry,
    ...(parsed.registryConfig === undefined ? {} : { registryConfig: parsed.registryConfig }),
    warehouse: { url: parsed.warehouse.url, root: parseWarehousePath(parsed.warehouse.root, 'read load file', 'warehouse.root').normal, baseDirectory: dirname(file) },
    // An Iceberg table's data files are Parquet; everything that reads or writes files sees that.
    format: parsed.format === 'iceberg' ? 'parquet' : parsed.format,
    codec: parsed.codec,
    ...(parsed.timeField === undefined ? {} : { timeField: parsed.timeField }),
    ...(parsed.maxRecordsPerRun === undefined ? {} : { maxRecordsPerRun: parsed.maxRecordsPerRun }),
    maxRecordsPerTask: parsed.maxRecordsPerTask,
    ...(parsed.maxFileBytes === undefined ? {} : { maxFileBytes: parsed.maxFileBytes }),
    memoryBudget: parsed.memoryBudget,
    rowGroupBytes: parsed.rowGroupBytes,
    parquetEncoderThread: parsed.parquetEncoderThread,
    quarantine: parsed.quarantine,
    latenessHorizonMs: parsed.latenessHorizon,
    ...(parsed.schedule === undefined ? {} : { schedule: parsed.schedule.trim() }),
    ...(parsed.transform === undefined ? {} : { transform: parsed.transform }),
    ...(parsed.audit === undefined ? {} : { audit: auditSettings(parsed.audit, parsed.source) }),
    layout: parsed.format === 'iceberg' ? 'iceberg' : (parsed.layout ?? 'hourly'),
    ...(parsed.format === 'iceberg' ? { iceberg: icebergSettings(parsed.iceberg, dirname(file)) } : {}),
    ...(parsed.hive === undefined ? {} : { hive: hiveSettings(parsed.hive, parsed.topics) }),
  };
}

function icebergSettings(iceberg: z.output<typeof loadFileSchema>['iceberg'], baseDirectory: string): IcebergTableSettings {
  const maintenance = iceberg?.maintenance;
  const catalog = iceberg?.catalog;
  const path = (file: string | undefined): string | undefined => (file === undefined ? undefined : resolve(baseDirectory, file));
  const credentialFile = path(catalog?.['credential.file']);
  const tokenFile = path(catalog?.['token.file']);
  const caFile = path(catalog?.['ssl.ca.location']);
  return {
    ...(iceberg?.fileSystem === undefined ? {} : { fileSystem: iceberg.fileSystem }),
    ...(catalog === undefined
      ? {}
      : {
          catalog: {
            type: catalog.type,
            uri: catalog.uri.replace(/\/+$/, ''),
            ...(catalog.warehouse === undefined ? {} : { warehouse: catalog.warehouse }),
            namespace: catalog.namespace,
            tables: catalog.tables ?? {},
            ...(credentialFile === undefined ? {} : { credentialFile }),
            ...(tokenFile === undefined ? {} : { tokenFile }),
            ...(catalog.scope === undefined ? {} : { scope: catalog.scope }),
            ...(caFile === undefined ? {} : { caFile }),
          },
        }),
    ...(maintenance === undefined
      ? {}
      : {
          maintenance: {
            schedule: maintenance.schedule.trim(),
            ...(maintenance.compaction === false ? {} : { compaction: maintenance.compaction }),
            ...(maintenance.expiry === false ? {} : { expiry: { olderThanMs: maintenance.expiry.olderThan, retainLast: maintenance.expiry.retainLast } }),
            ...(maintenance.orphans === false ? {} : { orphans: { olderThanMs: maintenance.orphans.olderThan } }),
          },
        }),
  };
}

function auditSettings(
  audit: { topic: string; bootstrap?: string[] | undefined; security?: Record<string, unknown> | undefined },
  source: { bootstrap: string[]; security?: Record<string, unknown> | undefined },
): LoadAuditSettings {
  // Without its own brokers the audit is on the source cluster, reached the same way.
  const security = audit.security ?? (audit.bootstrap === undefined ? source.security : undefined);
  return { topic: audit.topic, bootstrap: audit.bootstrap ?? source.bootstrap, ...(security === undefined ? {} : { security }) };
}

/**
 * The ClientSecurity of the load's source or audit cluster: reads the password and PEM files its
 * security block names (relative to the load file's folder), and `env` for a password variable.
 */
export function loadClientSecurity(load: LoadDefinition, cluster: 'source' | 'audit', env: Readonly<Record<string, string | undefined>>): ClientSecurity | undefined {
  const properties = cluster === 'source' ? load.source.security : load.audit?.security;
  if (properties === undefined) return undefined;
  return parseClientSecurity(properties, { source: `load file ${load.file} ${cluster}.security`, baseDirectory: dirname(load.file), env });
}

function hiveSettings(hive: { database: string; table?: string | undefined; tables?: Record<string, string> | undefined; fileSystem?: string | undefined }, topics: readonly string[] | undefined): HiveTableSettings {
  const [only] = topics ?? [];
  const tables = hive.table !== undefined && only !== undefined ? { [only]: hive.table } : (hive.tables ?? {});
  return { database: hive.database, tables, ...(hive.fileSystem === undefined ? {} : { fileSystem: hive.fileSystem }) };
}
