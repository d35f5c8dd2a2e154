/**
 * The failures of warehouse operations: one code per thing a caller may act on, a message that
 * names the operation, the location and what to do, and details {path, operation,
 * remoteException?} for programs. `retriable` is true only when the same call, unchanged, may
 * succeed later (HDFS in safe mode or fail-over, a network error on a call that changed nothing).
 */
import { TributaryError } from '../../common/errors.js';

export const WAREHOUSE_ERROR_CODES = [
  'WAREHOUSE_FILE_EXISTS',
  'WAREHOUSE_NOT_FOUND',
  'WAREHOUSE_PARENT_NOT_DIRECTORY',
  'WAREHOUSE_NOT_A_DIRECTORY',
  'WAREHOUSE_NOT_A_FILE',
  'WAREHOUSE_DIRECTORY_NOT_EMPTY',
  'WAREHOUSE_FILE_BUSY',
  'WAREHOUSE_CREATE_INCOMPLETE',
  'WAREHOUSE_OUTCOME_UNKNOWN',
  'WAREHOUSE_ACCESS_DENIED',
  'WAREHOUSE_QUOTA_EXCEEDED',
  'WAREHOUSE_UNAVAILABLE',
  'WAREHOUSE_INVALID_PATH',
  'WAREHOUSE_INVALID_URL',
  'WAREHOUSE_DATA_FAILED',
  'WAREHOUSE_ERROR',
] as const;

export type WarehouseErrorCode = (typeof WAREHOUSE_ERROR_CODES)[number];

/** What went wrong, and what to do about it. */
const EXPLANATIONS: Readonly<Record<WarehouseErrorCode, string>> = {
  WAREHOUSE_FILE_EXISTS: 'something already exists there. The warehouse never overwrites: use another name, or delete the old entry first',
  WAREHOUSE_NOT_FOUND: 'no such file or directory. Check the path; list its parent to see what is there',
  WAREHOUSE_PARENT_NOT_DIRECTORY: 'a parent of the path is a file, not a directory. Choose a path whose parents are directories',
  WAREHOUSE_NOT_A_DIRECTORY: 'the path is a file, not a directory',
  WAREHOUSE_NOT_A_FILE: 'the path is a directory, not a file',
  WAREHOUSE_DIRECTORY_NOT_EMPTY: 'the directory is not empty. Delete with { recursive: true } to remove it with its contents',
  WAREHOUSE_FILE_BUSY: 'the file is still open by an earlier writer (HDFS lease). Never write that name again: write a fresh name',
  WAREHOUSE_CREATE_INCOMPLETE: 'the file may have been left partly written. Do not use it: write a fresh name and delete this one later',
  WAREHOUSE_OUTCOME_UNKNOWN: 'the answer was lost and the state could not be read back, so whether the operation happened is unknown. Read the state (stat) before acting again',
  WAREHOUSE_ACCESS_DENIED: 'permission denied. Check the user the warehouse acts as and the permissions of the path',
  WAREHOUSE_QUOTA_EXCEEDED: 'a space or name quota is exhausted. Free space or raise the quota',
  WAREHOUSE_UNAVAILABLE: 'the warehouse is unavailable for now; nothing was changed. Retry later',
  WAREHOUSE_INVALID_PATH: 'the path is not valid',
  WAREHOUSE_INVALID_URL: 'the warehouse URL is not valid',
  WAREHOUSE_DATA_FAILED: 'the data to write failed while it was being read; the file was not created whole. Write it again under a fresh name',
  WAREHOUSE_ERROR: 'the warehouse failed the request',
};

/** The error HDFS reported, as WebHDFS's RemoteException JSON gives it. */
export interface RemoteExceptionInfo {
  readonly exception: string;
  readonly javaClassName?: string;
  /** The first line only: HDFS appends a Java stack trace. */
  readonly message: string;
}

export interface WarehouseErrorOptions {
  /** The warehouse operation, e.g. `create`, `rename`. */
  readonly operation: string;
  /** The warehouse path (relative to the root) the operation was about. */
  readonly path: string;
  /** Where it is, for the message: the warehouse's `describe(path)`. */
  readonly location: string;
  /** Said before the standard explanation, e.g. "HDFS said …". */
  readonly reason?: string;
  /** Overrides the code's standard explanation. */
  readonly explanation?: string;
  readonly retriable?: boolean;
  readonly cause?: unknown;
  readonly remoteException?: RemoteExceptionInfo;
  readonly details?: Readonly<Record<string, unknown>>;
}

const RETRIABLE_BY_DEFAULT: ReadonlySet<WarehouseErrorCode> = new Set(['WAREHOUSE_UNAVAILABLE']);

export function warehouseError(code: WarehouseErrorCode, options: WarehouseErrorOptions): TributaryError {
  const explanation = options.explanation ?? EXPLANATIONS[code];
  const reason = options.reason === undefined ? '' : `${options.reason}; `;
  return new TributaryError({
    code,
    message: `${options.operation} ${options.location}: ${reason}${explanation} (${code})`,
    retriable: options.retriable ?? RETRIABLE_BY_DEFAULT.has(code),
    ...(options.cause === undefined ? {} : { cause: options.cause }),
    details: {
      ...options.details,
      path: options.path,
      operation: options.operation,
      ...(options.remoteException === undefined ? {} : { remoteException: options.remoteException }),
    },
  });
}

export function hasWarehouseCode(error: unknown, code: WarehouseErrorCode): error is TributaryError {
  return error instanceof TributaryError && error.code === code;
}
