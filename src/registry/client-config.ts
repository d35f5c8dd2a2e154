/**
 * The registry client's security settings from Confluent's client property names (the ones
 * KafkaAvroSerializer and the other Confluent clients take), plus file and environment
 * variants so no secret has to sit on a command line or in a checked-in file:
 *
 *   basic.auth.credentials.source   USER_INFO (credentials below) | URL (the URL's user:password@)
 *   basic.auth.user.info            user:password — in a properties file only
 *   basic.auth.user.info.file       a file whose first line is user:password (ours)
 *   schema.registry.ssl.truststore.location   PEM CA certificates for HTTPS (instead of the system's)
 *   schema.registry.ssl.keystore.location     PEM private key + certificate chain (client certificate)
 *   schema.registry.ssl.endpoint.identification.algorithm   https (default) | empty: no hostname check
 *
 * Environment, used when the properties leave a setting out: TRIBUTARY_REGISTRY_USER_INFO
 * (user:password), TRIBUTARY_REGISTRY_USER_INFO_FILE, TRIBUTARY_REGISTRY_CA_FILE. The caller
 * passes the environment in (only src/cli reads process.env). Relative paths are taken from
 * `baseDirectory` (the folder of the file the properties came from).
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { TributaryError } from '../common/errors.js';
import type { RegistryBasicAuth, RegistryClientSecurity } from './client.js';

export const REGISTRY_CLIENT_PROPERTIES = [
  'basic.auth.credentials.source',
  'basic.auth.user.info',
  'basic.auth.user.info.file',
  'schema.registry.ssl.truststore.location',
  'schema.registry.ssl.keystore.location',
  'schema.registry.ssl.endpoint.identification.algorithm',
] as const;

export const REGISTRY_ENV = {
  userInfo: 'TRIBUTARY_REGISTRY_USER_INFO',
  userInfoFile: 'TRIBUTARY_REGISTRY_USER_INFO_FILE',
  caFile: 'TRIBUTARY_REGISTRY_CA_FILE',
} as const;

export type Environment = Readonly<Record<string, string | undefined>>;

export function registryClientSecurity(properties: Readonly<Record<string, string>>, env: Environment = {}, baseDirectory = '.'): RegistryClientSecurity {
  const source = (properties['basic.auth.credentials.source'] ?? 'USER_INFO').trim().toUpperCase();
  if (source !== 'USER_INFO' && source !== 'URL') {
    throw invalid(`basic.auth.credentials.source must be USER_INFO or URL (SASL_INHERIT is not supported), not "${source}"`);
  }
  const path = (file: string): string => resolve(baseDirectory, file);
  let basicAuth: RegistryBasicAuth | undefined;
  if (source === 'USER_INFO') {
    const inline = properties['basic.auth.user.info'];
    const file = properties['basic.auth.user.info.file'];
    if (inline !== undefined && file !== undefined) throw invalid('give basic.auth.user.info or basic.auth.user.info.file, not both');
    if (inline !== undefined) basicAuth = parseUserInfo(inline, 'basic.auth.user.info');
    else if (file !== undefined) basicAuth = parseUserInfo(firstLine(path(file), 'basic.auth.user.info.file'), path(file));
    else if (env[REGISTRY_ENV.userInfo] !== undefined) basicAuth = parseUserInfo(env[REGISTRY_ENV.userInfo] ?? '', REGISTRY_ENV.userInfo);
    else if (env[REGISTRY_ENV.userInfoFile] !== undefined) {
      const from = env[REGISTRY_ENV.userInfoFile] ?? '';
      basicAuth = parseUserInfo(firstLine(from, REGISTRY_ENV.userInfoFile), from);
    }
  }
  const caFile = properties['schema.registry.ssl.truststore.location'] ?? env[REGISTRY_ENV.caFile];
  const keystore = properties['schema.registry.ssl.keystore.location'];
  const algorithm = properties['schema.registry.ssl.endpoint.identification.algorithm'];
  const checkHostname = algorithm === undefined || algorithm.trim().toLowerCase() === 'https';
  if (algorithm !== undefined && !checkHostname && algorithm.trim() !== '') {
    throw invalid(`schema.registry.ssl.endpoint.identification.algorithm must be https or empty, not "${algorithm}"`);
  }
  const ca = caFile === undefined || caFile === '' ? undefined : readPem(path(caFile), 'schema.registry.ssl.truststore.location');
  const keyAndChain = keystore === undefined ? undefined : readPem(path(keystore), 'schema.registry.ssl.keystore.location');
  const tls =
    ca === undefined && keyAndChain === undefined && checkHostname
      ? undefined
      : { ca, checkHostname, ...(keyAndChain === undefined ? {} : { cert: keyAndChain, key: keyAndChain }) };
  return { ...(basicAuth === undefined ? {} : { basicAuth }), ...(tls === undefined ? {} : { tls }) };
}

/** `user:password`; the password may contain ":" (only the first one separates). */
export function parseUserInfo(text: string, source: string): RegistryBasicAuth {
  const colon = text.indexOf(':');
  if (colon <= 0) throw invalid(`${source} must be user:password`);
  return { username: text.slice(0, colon), password: text.slice(colon + 1) };
}

function firstLine(file: string, setting: string): string {
  return readText(file, setting).split(/\r?\n/)[0] ?? '';
}

function readPem(file: string, setting: string): Buffer {
  const text = readText(file, setting);
  if (!text.includes('-----BEGIN ')) throw invalid(`${setting}: ${file} is not a PEM file`);
  return Buffer.from(text);
}

function readText(file: string, setting: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (error) {
    throw new TributaryError({ code: 'CONFIG_INVALID', message: `${setting}: cannot read ${file}: ${(error as Error).message}`, cause: error });
  }
}

function invalid(message: string): TributaryError {
  return new TributaryError({ code: 'CONFIG_INVALID', message });
}
