/**
 * The security settings of our own clients (mirror, loader, workers, dashboard, CLI, the broker's
 * replica fetcher), written with the Kafka / librdkafka property names:
 *
 *   security.protocol                      PLAINTEXT (default) | SSL | SASL_PLAINTEXT | SASL_SSL
 *   sasl.mechanism                         PLAIN | SCRAM-SHA-256 | SCRAM-SHA-512 (librdkafka's sasl.mechanisms too)
 *   sasl.username
 *   sasl.password.file                     a file holding the password (one trailing newline is dropped)
 *   sasl.password.env                      else the environment variable holding it (default TRIBUTARY_SASL_PASSWORD)
 *   ssl.truststore.location                PEM CA certificates the broker's certificate must chain to
 *   ssl.keystore.location                  PEM private key + certificate chain: a client certificate
 *   ssl.endpoint.identification.algorithm  https (default: the broker's name must match its certificate) | empty (no check)
 *
 * A password is never taken from the properties themselves (`sasl.password`, `sasl.jaas.config`):
 * config files get copied, committed and printed, a password file or variable does not. The password
 * and the client private key are kept in non-enumerable properties, so logging or serialising a
 * `ClientSecurity` (pino, JSON.stringify, util.inspect) cannot print them.
 */
import { readFileSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { z } from 'zod';
import { parseConfig } from '../common/config.js';
import { TributaryError } from '../common/errors.js';

export type SaslMechanismName = 'PLAIN' | 'SCRAM-SHA-256' | 'SCRAM-SHA-512';
export type SecurityProtocol = 'PLAINTEXT' | 'SSL' | 'SASL_PLAINTEXT' | 'SASL_SSL';

export interface ClientTls {
  /** CA certificates (PEM) to trust; absent: Node's default roots. */
  readonly ca?: Buffer;
  /** Client certificate chain (PEM), for brokers with ssl.client.auth. */
  readonly cert?: Buffer;
  /** The client certificate's private key (PEM); non-enumerable. */
  readonly key?: Buffer;
  /** Whether the broker's certificate must name the host connected to. */
  readonly checkHostname: boolean;
}

export interface ClientSasl {
  readonly mechanism: SaslMechanismName;
  readonly username: string;
  /** Non-enumerable: present, but invisible to loggers and serialisers. */
  readonly password: string;
}

/** How a client secures its broker connections; `{}` is PLAINTEXT. */
export interface ClientSecurity {
  readonly tls?: ClientTls;
  readonly sasl?: ClientSasl;
}

export const DEFAULT_PASSWORD_ENV = 'TRIBUTARY_SASL_PASSWORD';
export const SECURITY_PROTOCOLS: readonly SecurityProtocol[] = ['PLAINTEXT', 'SSL', 'SASL_PLAINTEXT', 'SASL_SSL'];
export const SASL_MECHANISMS: readonly SaslMechanismName[] = ['PLAIN', 'SCRAM-SHA-256', 'SCRAM-SHA-512'];

/** The property names this module reads. */
export const CLIENT_SECURITY_KEYS = [
  'security.protocol',
  'sasl.mechanism',
  'sasl.mechanisms',
  'sasl.username',
  'sasl.password.file',
  'sasl.password.env',
  'ssl.truststore.location',
  'ssl.keystore.location',
  'ssl.endpoint.identification.algorithm',
  'ssl.truststore.type',
  'ssl.keystore.type',
] as const;

/** Properties whose value would be a secret in the config itself: refused, with what to do instead. */
const SECRET_KEYS: Readonly<Record<string, string>> = {
  'sasl.password': 'put the password in a file named by sasl.password.file, or in the environment variable named by sasl.password.env (default TRIBUTARY_SASL_PASSWORD)',
  'sasl.jaas.config': 'give sasl.mechanism, sasl.username and sasl.password.file (or the environment variable TRIBUTARY_SASL_PASSWORD) instead',
  'ssl.key.password': 'keep the client key unencrypted in ssl.keystore.location, readable only by this user',
  'ssl.keystore.password': 'keystores are PEM files here: no password (ssl.keystore.location holds key + chain)',
  'ssl.truststore.password': 'truststores are PEM files here: no password',
};

const value = z.union([z.string(), z.number(), z.boolean(), z.null()]).transform((raw) => (raw === null ? '' : String(raw).trim()));
const upperCase = (names: readonly string[], hint = '') =>
  value.transform((text) => text.toUpperCase()).pipe(z.enum(names as [string, ...string[]], { error: (issue) => `is "${String(issue.input)}"; use ${names.join(' or ')}${hint}` }));

/** The properties' values, checked one by one; how they combine is checked by parseClientSecurity. */
export const clientSecurityPropertiesSchema = z.strictObject({
  // librdkafka writes protocols and mechanisms in lower case; Kafka in upper case.
  'security.protocol': upperCase(SECURITY_PROTOCOLS).optional(),
  'sasl.mechanism': upperCase(SASL_MECHANISMS, ' (the mechanisms Tributary speaks)').optional(),
  'sasl.username': value.pipe(z.string().min(1, 'is empty; give the user name')).optional(),
  'sasl.password.file': value.pipe(z.string().min(1, 'is empty; name the file holding the password')).optional(),
  'sasl.password.env': value.pipe(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must name an environment variable (letters, digits, "_")')).optional(),
  'ssl.truststore.location': value.pipe(z.string().min(1, 'is empty; name a PEM file of CA certificates, or remove it')).optional(),
  'ssl.keystore.location': value.pipe(z.string().min(1, 'is empty; name a PEM file of key and certificate chain, or remove it')).optional(),
  // Kafka's PEM stores (KIP-651) say so; a config shared with Kafka's tools may carry these.
  'ssl.truststore.type': upperCase(['PEM'], ': Tributary reads PEM files only (convert a JKS or PKCS12 store with keytool and openssl)').optional(),
  'ssl.keystore.type': upperCase(['PEM'], ': Tributary reads PEM files only (convert a JKS or PKCS12 store with keytool and openssl)').optional(),
  'ssl.endpoint.identification.algorithm': value
    .pipe(z.string().refine((text) => text === '' || text.toLowerCase() === 'https', 'use https (check the broker name against its certificate) or leave it empty (no check)'))
    .optional(),
});
type SecurityValues = z.output<typeof clientSecurityPropertiesSchema>;

export interface ClientSecurityOptions {
  /** Where the properties came from, for messages: "client.properties", "mirror.yaml sources[0].security". */
  readonly source: string;
  /** Relative file names are taken from here (the folder of the config file); default: the working directory. */
  readonly baseDirectory?: string;
  /** Where `sasl.password.env` is looked up; the composition roots pass process.env. */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Keys outside security.*, sasl.*, ssl.* are ignored (a Kafka tools' command config holds other client settings); default false: refused. */
  readonly ignoreOtherKeys?: boolean;
}

export type ClientSecurityProperties = Readonly<Record<string, unknown>>;

/** Builds a ClientSecurity from the properties, reading the password and PEM files they name. */
export function parseClientSecurity(properties: ClientSecurityProperties, options: ClientSecurityOptions): ClientSecurity {
  const { values, protocol } = validate(properties, options);
  const tls = protocol === 'SSL' || protocol === 'SASL_SSL';
  const sasl = protocol === 'SASL_PLAINTEXT' || protocol === 'SASL_SSL';
  return {
    ...(tls ? { tls: parseTls(values, options) } : {}),
    ...(sasl ? { sasl: parseSasl(values, protocol, options) } : {}),
  };
}

/**
 * Checks the properties without reading the files or the environment they name, and returns the
 * protocol: for config files read where the secrets are not (a scheduler listing load files).
 */
export function checkClientSecurity(properties: ClientSecurityProperties, options: Omit<ClientSecurityOptions, 'env' | 'baseDirectory'>): SecurityProtocol {
  const { values, protocol } = validate(properties, options);
  if (protocol === 'SASL_PLAINTEXT' || protocol === 'SASL_SSL') saslIdentity(values, protocol, options.source);
  return protocol;
}

function validate(properties: ClientSecurityProperties, options: Pick<ClientSecurityOptions, 'source' | 'ignoreOtherKeys'>): { values: SecurityValues; protocol: SecurityProtocol } {
  const values = parseConfig(clientSecurityPropertiesSchema, checkKeys(properties, options), options.source);
  const protocol = (values['security.protocol'] ?? 'PLAINTEXT') as SecurityProtocol;
  const tls = protocol === 'SSL' || protocol === 'SASL_SSL';
  const sasl = protocol === 'SASL_PLAINTEXT' || protocol === 'SASL_SSL';
  for (const key of Object.keys(values)) {
    if (!sasl && key.startsWith('sasl.')) fail(options.source, key, `is set but security.protocol is ${protocol}, which does not use SASL: set security.protocol=SASL_SSL (or SASL_PLAINTEXT), or remove ${key}`);
    if (!tls && key.startsWith('ssl.')) fail(options.source, key, `is set but security.protocol is ${protocol}, which does not use TLS: set security.protocol=SSL or SASL_SSL, or remove ${key}`);
  }
  return { values, protocol };
}

/** A client SASL identity whose password stays out of logs. */
export function clientSasl(mechanism: SaslMechanismName, username: string, password: string): ClientSasl {
  const sasl = { mechanism, username };
  Object.defineProperty(sasl, 'password', { value: password, enumerable: false });
  return sasl as ClientSasl;
}

/** Client TLS settings whose private key stays out of logs. */
export function clientTls(settings: { ca?: Buffer; cert?: Buffer; key?: Buffer; checkHostname: boolean }): ClientTls {
  const { key, ...visible } = settings;
  const tls = { ...visible };
  if (key !== undefined) Object.defineProperty(tls, 'key', { value: key, enumerable: false });
  return tls as ClientTls;
}

/** The protocol name a ClientSecurity amounts to, for logs and messages. */
export function securityProtocolOf(security: ClientSecurity | undefined): SecurityProtocol {
  if (security?.sasl !== undefined) return security.tls !== undefined ? 'SASL_SSL' : 'SASL_PLAINTEXT';
  return security?.tls !== undefined ? 'SSL' : 'PLAINTEXT';
}

/** Refuses secrets and unknown security keys with advice; folds librdkafka's sasl.mechanisms into sasl.mechanism. */
function checkKeys(properties: ClientSecurityProperties, options: Pick<ClientSecurityOptions, 'source' | 'ignoreOtherKeys'>): Record<string, unknown> {
  const known = new Set<string>(CLIENT_SECURITY_KEYS);
  const kept: Record<string, unknown> = {};
  for (const [key, raw] of Object.entries(properties)) {
    const advice = SECRET_KEYS[key];
    if (advice !== undefined) fail(options.source, key, `may not be given in a config: ${advice}`);
    if (!known.has(key)) {
      if (options.ignoreOtherKeys === true && !/^(security|sasl|ssl)\./.test(key)) continue;
      fail(options.source, key, `is not a client security property Tributary knows; use ${CLIENT_SECURITY_KEYS.filter((name) => name !== 'sasl.mechanisms').join(', ')}`);
    }
    kept[key] = raw;
  }
  if ('sasl.mechanisms' in kept) {
    if ('sasl.mechanism' in kept) fail(options.source, 'sasl.mechanisms', 'and sasl.mechanism are both set: keep one');
    kept['sasl.mechanism'] = kept['sasl.mechanisms'];
    delete kept['sasl.mechanisms'];
  }
  return kept;
}

function parseTls(values: SecurityValues, options: ClientSecurityOptions): ClientTls {
  const truststore = values['ssl.truststore.location'];
  const keystore = values['ssl.keystore.location'];
  let ca: Buffer | undefined;
  if (truststore !== undefined) {
    const certificates = pemBlocks(readPem(truststore, 'ssl.truststore.location', options), /^(X509 |TRUSTED )?CERTIFICATE$/);
    if (certificates.length === 0) fail(options.source, 'ssl.truststore.location', `names ${truststore}, which holds no PEM certificate (-----BEGIN CERTIFICATE-----); give the CA certificates in PEM`);
    ca = Buffer.from(certificates.join('\n'));
  }
  let cert: Buffer | undefined;
  let key: Buffer | undefined;
  if (keystore !== undefined) {
    const pem = readPem(keystore, 'ssl.keystore.location', options);
    const keys = pemBlocks(pem, /PRIVATE KEY$/);
    const chain = pemBlocks(pem, /^CERTIFICATE$/);
    if (keys.length !== 1 || chain.length === 0) {
      fail(options.source, 'ssl.keystore.location', `names ${keystore}, which holds ${keys.length} private keys and ${chain.length} certificates; it must hold one PEM private key and the client certificate chain`);
    }
    if (keys[0]?.startsWith('-----BEGIN ENCRYPTED') === true) {
      fail(options.source, 'ssl.keystore.location', `names ${keystore}, whose private key is encrypted; store it unencrypted (openssl pkey -in KEY -out KEY.pem), readable only by this user`);
    }
    key = Buffer.from(keys[0] ?? '');
    cert = Buffer.from(chain.join('\n'));
  }
  const checkHostname = (values['ssl.endpoint.identification.algorithm'] ?? 'https') !== '';
  return clientTls({ ...(ca === undefined ? {} : { ca }), ...(cert === undefined ? {} : { cert }), ...(key === undefined ? {} : { key }), checkHostname });
}

function parseSasl(values: SecurityValues, protocol: SecurityProtocol, options: ClientSecurityOptions): ClientSasl {
  const { mechanism, username } = saslIdentity(values, protocol, options.source);
  return clientSasl(mechanism, username, readPassword(values, options));
}

function saslIdentity(values: SecurityValues, protocol: SecurityProtocol, source: string): { mechanism: SaslMechanismName; username: string } {
  const mechanism = values['sasl.mechanism'] as SaslMechanismName | undefined;
  if (mechanism === undefined) fail(source, 'sasl.mechanism', `is missing; security.protocol ${protocol} needs one of ${SASL_MECHANISMS.join(', ')}`);
  if (mechanism === 'PLAIN' && protocol === 'SASL_PLAINTEXT') {
    fail(source, 'sasl.mechanism', 'is PLAIN over SASL_PLAINTEXT, which would send the password in clear (brokers refuse it); use security.protocol=SASL_SSL, or SCRAM-SHA-512');
  }
  const username = values['sasl.username'];
  if (username === undefined) fail(source, 'sasl.username', `is missing; SASL ${mechanism} needs the user's name`);
  return { mechanism, username };
}

function readPassword(values: SecurityValues, options: ClientSecurityOptions): string {
  const file = values['sasl.password.file'];
  if (file !== undefined) {
    const path = resolvePath(file, options);
    let text: string;
    try {
      text = readFileSync(path, 'utf8');
    } catch (error) {
      throw unreadable(options.source, 'sasl.password.file', path, error);
    }
    const password = text.replace(/\r?\n$/, '');
    if (password === '') fail(options.source, 'sasl.password.file', `names ${path}, which is empty; write the password into it`);
    return password;
  }
  const variable = values['sasl.password.env'] ?? DEFAULT_PASSWORD_ENV;
  const password = (options.env ?? {})[variable];
  if (password === undefined || password === '') {
    fail(options.source, 'sasl.password.file', `is not set and the environment variable ${variable} is empty: give the password in one of them (never on the command line)`);
  }
  return password;
}

function unreadable(source: string, key: string, path: string, error: unknown): TributaryError {
  return new TributaryError({
    code: 'CONFIG_INVALID',
    message: `${source}: ${key} names ${path}, which cannot be read (${(error as NodeJS.ErrnoException).code ?? (error as Error).message}); check the path and that this user may read it`,
    cause: error,
    details: { source, key, path },
  });
}

function readPem(location: string, key: string, options: ClientSecurityOptions): string {
  const path = resolvePath(location, options);
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    throw unreadable(options.source, key, path, error);
  }
}

/** The PEM blocks whose label matches, each from BEGIN to END. */
function pemBlocks(pem: string, label: RegExp): string[] {
  const blocks: string[] = [];
  for (const match of pem.matchAll(/-----BEGIN ([A-Z0-9 ]+)-----[\s\S]*?-----END \1-----/g)) {
    if (label.test(match[1] ?? '')) blocks.push(match[0]);
  }
  return blocks;
}

function resolvePath(path: string, options: ClientSecurityOptions): string {
  return isAbsolute(path) || options.baseDirectory === undefined ? path : resolve(options.baseDirectory, path);
}

function fail(source: string, key: string, problem: string): never {
  throw new TributaryError({
    code: 'CONFIG_INVALID',
    message: `${source}: ${key} ${problem}`,
    details: { source, key },
  });
}

/**
 * A `security:` block of a YAML/JSON config (mirror, load file): the properties above as a mapping,
 * checked when the file is read; resolved (files and environment read) with parseClientSecurity
 * where the connections are opened.
 */
export const securityBlockSchema = z.record(z.string(), z.unknown()).superRefine((properties, context) => {
  try {
    checkClientSecurity(properties, { source: 'security' });
  } catch (error) {
    const message = (error as Error).message.replace(/^invalid configuration in security: /, '').replace(/^security: /, '').replace(/\.? Fix these values and try again\.$/, '');
    context.addIssue({ code: 'custom', message });
  }
});

/** `{ security }` when there is one: for options objects under exactOptionalPropertyTypes. */
export function securityOption(security: ClientSecurity | undefined): { security?: ClientSecurity } {
  return security === undefined ? {} : { security };
}
