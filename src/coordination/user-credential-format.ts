/**
 * The data of a `/config/users/<user>` node, Kafka's format (ScramCredentialUtils, ConfigEntity):
 *
 *   {"version":1,"config":{"SCRAM-SHA-512":"salt=<b64>,stored_key=<b64>,server_key=<b64>,iterations=<n>", …}}
 *
 * `config` may hold other keys (Kafka keeps user quotas there); they pass through untouched.
 */
import { TributaryError } from '../common/errors.js';
import { isScramMechanism, type ScramCredential, type ScramMechanism } from '../protocol/sasl/scram.js';

const KEY_BYTES: Readonly<Record<ScramMechanism, number>> = { 'SCRAM-SHA-256': 32, 'SCRAM-SHA-512': 64 };
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** Kafka's ScramCredentialUtils.credentialToString. */
export function formatScramCredential(credential: ScramCredential): string {
  return `salt=${credential.salt.toString('base64')},stored_key=${credential.storedKey.toString('base64')},server_key=${credential.serverKey.toString('base64')},iterations=${credential.iterations}`;
}

/** Kafka's credentialFromString, every part checked; throws USER_CREDENTIALS_INVALID naming `where`. */
export function parseScramCredential(mechanism: ScramMechanism, text: string, where = 'a SCRAM credential'): ScramCredential {
  const fields = new Map<string, string>();
  for (const part of text.split(',')) {
    const at = part.indexOf('=');
    if (at > 0) fields.set(part.slice(0, at), part.slice(at + 1));
  }
  const bytes = (name: string, length?: number): Buffer => {
    const value = fields.get(name) ?? '';
    const decoded = Buffer.from(value, 'base64');
    if (value === '' || !BASE64.test(value) || (length !== undefined && decoded.length !== length)) {
      throw credentialsInvalid(where, `${name} is missing or not ${length === undefined ? '' : `${length} `}base64 bytes`);
    }
    return decoded;
  };
  const iterations = fields.get('iterations') ?? '';
  if (!/^[1-9][0-9]{0,8}$/.test(iterations)) throw credentialsInvalid(where, 'iterations is missing or not a positive number');
  return { salt: bytes('salt'), storedKey: bytes('stored_key', KEY_BYTES[mechanism]), serverKey: bytes('server_key', KEY_BYTES[mechanism]), iterations: Number(iterations) };
}

export function credentialsInvalid(where: string, reason: string, cause?: unknown): TributaryError {
  return new TributaryError({
    code: 'USER_CREDENTIALS_INVALID',
    message: `${where}: ${reason}; remove the user (tributary users remove) and add it again`,
    ...(cause === undefined ? {} : { cause }),
    details: { where },
  });
}

/** The `config` object of a user node; throws USER_CREDENTIALS_INVALID naming `path`. */
export function parseUserNode(path: string, data: Buffer): Record<string, string> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(data.toString('utf8'));
  } catch (error) {
    throw credentialsInvalid(path, 'not JSON', error);
  }
  const config = (parsed as { config?: unknown } | null)?.config;
  if (typeof config !== 'object' || config === null || Array.isArray(config) || Object.values(config).some((value) => typeof value !== 'string')) {
    throw credentialsInvalid(path, 'not {"version":1,"config":{…}} with string values');
  }
  return { ...(config as Record<string, string>) };
}

export function encodeUserNode(config: Readonly<Record<string, string>>): Buffer {
  return Buffer.from(JSON.stringify({ version: 1, config }), 'utf8');
}

/** The SCRAM credentials in a user's `config`, by mechanism; throws USER_CREDENTIALS_INVALID. */
export function credentialsOf(path: string, config: Readonly<Record<string, string>>): Map<ScramMechanism, ScramCredential> {
  const credentials = new Map<ScramMechanism, ScramCredential>();
  for (const [key, value] of Object.entries(config)) {
    if (isScramMechanism(key)) credentials.set(key, parseScramCredential(key, value, `${path} ${key}`));
  }
  return credentials;
}
