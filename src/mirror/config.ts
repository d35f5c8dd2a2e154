/**
 * The mirror's settings: which source clusters, which topics, which group, and the tuning knobs,
 * validated with zod whether they come from `tributary mirror start` flags or from the
 * `--mirror-config` file of an offline broker (YAML or JSON; JSON is YAML).
 */
import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { parseConfig, zookeeperConnectSchema } from '../common/config.js';
import { TributaryError } from '../common/errors.js';
import { parseClientSecurity, securityBlockSchema, type ClientSecurity } from '../client/security-config.js';

const sourceNameSchema = z.string().regex(/^[A-Za-z0-9._-]{1,64}$/, 'a source name is 1–64 of A–Z, a–z, 0–9, ".", "_", "-"');

const regexSchema = z.string().min(1).refine((pattern) => {
  try {
    new RegExp(pattern);
    return true;
  } catch {
    return false;
  }
}, 'not a valid regular expression');

/** `security`: how to reach this source's brokers (client security properties, security-config.ts). */
export const mirrorSourceSchema = z.object({ name: sourceNameSchema, zookeeper: zookeeperConnectSchema, security: securityBlockSchema.optional() }).strict();
export type MirrorSource = z.output<typeof mirrorSourceSchema>;

const positiveInteger = z.coerce.number().int().min(1);

/** Everything but the target: what a `--mirror-config` file holds (the broker is the target). */
export const mirrorSettingsSchema = z
  .object({
    sources: z
      .array(mirrorSourceSchema)
      .min(1, 'name at least one source cluster')
      .refine((sources) => new Set(sources.map((source) => source.name)).size === sources.length, 'source names must be unique'),
    /** Topics whose whole name matches are mirrored (MirrorMaker's rule); `_audit` always is. */
    whitelist: regexSchema,
    /** Topics whose whole name matches are not mirrored, even when whitelisted (except `_audit`). */
    blacklist: regexSchema.optional(),
    /** The ZooKeeper consumer group on every source cluster; mirror processes with the same group share the work. */
    group: z.string().regex(/^[A-Za-z0-9._-]{1,200}$/, 'a group name is 1–200 of A–Z, a–z, 0–9, ".", "_", "-"'),
    /** Schema registry URL for the audit counter's AuditCount events; without it the mirror does not count. */
    registry: z.url().optional(),
    /** Where a source partition without a committed offset starts. */
    autoOffsetReset: z.enum(['smallest', 'largest']).default('smallest'),
    /** How often acknowledged source offsets are committed. */
    commitIntervalMs: positiveInteger.default(1000),
    /** How often the lag of every owned source partition is measured. */
    lagIntervalMs: positiveInteger.default(5000),
    /** Records pulled but not yet acknowledged by the target, per topic stream, before pulling waits. */
    maxInFlightRecords: positiveInteger.default(10_000),
    /** Records sent to the target in one `send`. */
    maxBatchRecords: positiveInteger.default(500),
    /**
     * Long-poll wait of one partition fetch. Short, because a topic's partitions are polled over one
     * connection whose requests a broker serves one at a time: an idle partition's poll delays the
     * next partition's records by up to this long.
     */
    fetchWaitMaxMs: positiveInteger.default(100),
    /** Streams (pumps) per mirrored topic in this process. */
    streamsPerTopic: positiveInteger.max(64).default(1),
    sessionTimeoutMs: positiveInteger.min(1000).default(6000),
    rebalanceBackoffMs: positiveInteger.default(2000),
    /** Generous: a restarted mirror waits for its predecessor's session to expire before it can claim. */
    rebalanceMaxRetries: positiveInteger.default(10),
    /** How long a commit waits for the target's acknowledgements before it is skipped (tried again later). */
    commitWaitMs: positiveInteger.default(30_000),
    /** The audit's window of creation time; every tier must use the same (the audit's default, 10 min, unless set). */
    auditWindowMs: positiveInteger.optional(),
    /** How long after its end a window still takes counts (the audit's default unless set). */
    auditLatenessMs: z.coerce.number().int().min(0).optional(),
    /** How to reach the target (offline) cluster's brokers: client security properties (security-config.ts). */
    targetSecurity: securityBlockSchema.optional(),
    /** Accepted for older configs and unused: counts are published with each commit, per source range (range-audit.ts). */
    auditPublishIntervalMs: z.coerce.number().int().min(0).optional(),
  })
  .strict();

export type MirrorSettings = z.output<typeof mirrorSettingsSchema>;
export type MirrorSettingsInput = z.input<typeof mirrorSettingsSchema>;

/** The offline cluster: its brokers, or its ZooKeeper (whose broker registry names them). */
export type MirrorTargetAddress = { readonly bootstrap: readonly string[] } | { readonly zookeeper: string };

/** The security of each connection the mirror opens, resolved (files and environment read). */
export interface MirrorSecurity {
  readonly target?: ClientSecurity;
  /** By source name. */
  readonly sources: ReadonlyMap<string, ClientSecurity>;
}

/**
 * Reads the password and PEM files the settings' security blocks name (`env` for the password
 * variables). `target` (from `--command-config`) replaces the file's targetSecurity.
 */
export function resolveMirrorSecurity(settings: MirrorSettings, env: Readonly<Record<string, string | undefined>>, target?: ClientSecurity): MirrorSecurity {
  const sources = new Map<string, ClientSecurity>();
  settings.sources.forEach((source, index) => {
    if (source.security !== undefined) sources.set(source.name, parseClientSecurity(source.security, { source: `mirror sources[${index}] (${source.name}) security`, env }));
  });
  const fromFile = settings.targetSecurity === undefined ? undefined : parseClientSecurity(settings.targetSecurity, { source: 'mirror targetSecurity', env });
  const resolved = target ?? fromFile;
  return { sources, ...(resolved === undefined ? {} : { target: resolved }) };
}

export function parseMirrorSettings(input: unknown, source: string): MirrorSettings {
  return parseConfig(mirrorSettingsSchema, input, source);
}

/** `NAME=ZK_CONNECT`, as `--source` takes it. */
export function parseSourceFlag(value: string): { name: string; zookeeper: string } {
  const at = value.indexOf('=');
  if (at <= 0) {
    throw new TributaryError({ code: 'CONFIG_INVALID', message: `--source takes NAME=ZK_CONNECT (e.g. dc1=127.0.0.1:2181/online1), not "${value}"` });
  }
  return { name: value.slice(0, at), zookeeper: value.slice(at + 1) };
}

/** Reads a `--mirror-config` file (YAML or JSON) into validated settings. */
export function loadMirrorSettingsFile(path: string): MirrorSettings {
  return parseMirrorSettings(readMirrorConfigFile(path), path);
}

/** A mirror config file's contents, not yet validated (the command line may add to them). */
export function readMirrorConfigFile(path: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new TributaryError({ code: 'CONFIG_INVALID', message: `cannot read the mirror config ${path}: ${(error as Error).message}`, cause: error, details: { path } });
  }
  let parsed: unknown;
  try {
    parsed = parseYaml(text);
  } catch (error) {
    throw new TributaryError({ code: 'CONFIG_INVALID', message: `the mirror config ${path} is neither YAML nor JSON: ${(error as Error).message}`, cause: error, details: { path } });
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new TributaryError({ code: 'CONFIG_INVALID', message: `the mirror config ${path} must be a mapping (sources, whitelist, group, …)`, details: { path } });
  }
  return parsed as Record<string, unknown>;
}
