/**
 * The schema registry's failures and the Confluent error codes they are answered with.
 *
 * The registry throws TributaryErrors whose `code` is one of REGISTRY_ERROR_CODES; the REST layer
 * turns each into Confluent's body `{"error_code": <int>, "message": "<text>"}` with the HTTP
 * status below (codes from Confluent's `rest/exceptions/Errors.java`). Where clients compare
 * Confluent's exact wording (the 404s), the messages keep it.
 */
import { TributaryError } from '../common/errors.js';

export interface ConfluentError {
  readonly status: number;
  readonly errorCode: number;
}

export const REGISTRY_ERRORS = {
  SUBJECT_NOT_FOUND: { status: 404, errorCode: 40401 },
  VERSION_NOT_FOUND: { status: 404, errorCode: 40402 },
  SCHEMA_NOT_FOUND: { status: 404, errorCode: 40403 },
  SUBJECT_SOFT_DELETED: { status: 404, errorCode: 40404 },
  SUBJECT_NOT_SOFT_DELETED: { status: 404, errorCode: 40405 },
  VERSION_SOFT_DELETED: { status: 404, errorCode: 40406 },
  VERSION_NOT_SOFT_DELETED: { status: 404, errorCode: 40407 },
  SUBJECT_CONFIG_NOT_FOUND: { status: 404, errorCode: 40408 },
  /** Confluent up to 8.0.3 answers 409 with error_code 409 (newer servers 40901); clients read the status. */
  SCHEMA_INCOMPATIBLE: { status: 409, errorCode: 409 },
  SCHEMA_INVALID: { status: 422, errorCode: 42201 },
  SCHEMA_TYPE_UNSUPPORTED: { status: 422, errorCode: 42201 },
  REQUEST_INVALID: { status: 422, errorCode: 42201 },
  VERSION_INVALID: { status: 422, errorCode: 42202 },
  COMPATIBILITY_LEVEL_INVALID: { status: 422, errorCode: 42203 },
  MODE_INVALID: { status: 422, errorCode: 42204 },
  OPERATION_NOT_PERMITTED: { status: 422, errorCode: 42205 },
  SUBJECT_INVALID: { status: 422, errorCode: 42208 },
  SCHEMA_TOO_LARGE: { status: 422, errorCode: 42209 },
  STORE_ERROR: { status: 500, errorCode: 50001 },
  STORE_TIMEOUT: { status: 500, errorCode: 50002 },
} as const satisfies Readonly<Record<string, ConfluentError>>;

export type RegistryErrorCode = keyof typeof REGISTRY_ERRORS;

export function registryError(
  code: RegistryErrorCode,
  message: string,
  options: { readonly cause?: unknown; readonly details?: Readonly<Record<string, unknown>>; readonly retriable?: boolean } = {},
): TributaryError {
  return new TributaryError({
    code,
    message,
    retriable: options.retriable ?? code === 'STORE_TIMEOUT',
    ...(options.cause === undefined ? {} : { cause: options.cause }),
    ...(options.details === undefined ? {} : { details: options.details }),
  });
}

/** The Confluent status and code of a registry failure, or undefined for any other error. */
export function confluentErrorOf(error: unknown): ConfluentError | undefined {
  if (!(error instanceof TributaryError)) return undefined;
  return Object.hasOwn(REGISTRY_ERRORS, error.code) ? REGISTRY_ERRORS[error.code as RegistryErrorCode] : undefined;
}

export function subjectNotFound(subject: string): TributaryError {
  return registryError('SUBJECT_NOT_FOUND', `Subject '${subject}' not found.`, { details: { subject } });
}

export function versionNotFound(subject: string, version: number | string): TributaryError {
  return registryError('VERSION_NOT_FOUND', `Version ${version} not found.`, { details: { subject, version } });
}

export function schemaIdNotFound(id: number): TributaryError {
  return registryError('SCHEMA_NOT_FOUND', `Schema ${id} not found`, { details: { id } });
}
