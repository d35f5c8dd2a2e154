/**
 * WebHDFS errors: the `RemoteException` JSON body (`{"RemoteException":{"exception",
 * "javaClassName","message"}}`, Hadoop's WebHDFS REST API, "Error Responses") and what each
 * exception name means for a caller.
 *
 * We branch on the exception's simple name, never on the HTTP status: WebHDFS turns every
 * IOException into 403, so safe mode (SafeModeException, try again soon) and an existing file
 * (FileAlreadyExistsException, never retry) share a status.
 */
import type { RemoteExceptionInfo, WarehouseErrorCode } from './errors.js';

export interface RemoteExceptionMeaning {
  readonly code: WarehouseErrorCode;
  readonly retriable: boolean;
}

const permanent = (code: WarehouseErrorCode): RemoteExceptionMeaning => ({ code, retriable: false });
const transient: RemoteExceptionMeaning = { code: 'WAREHOUSE_UNAVAILABLE', retriable: true };

export const REMOTE_EXCEPTION_MEANINGS: Readonly<Record<string, RemoteExceptionMeaning>> = {
  FileAlreadyExistsException: permanent('WAREHOUSE_FILE_EXISTS'),
  FileNotFoundException: permanent('WAREHOUSE_NOT_FOUND'),
  ParentNotDirectoryException: permanent('WAREHOUSE_PARENT_NOT_DIRECTORY'),
  PathIsNotDirectoryException: permanent('WAREHOUSE_NOT_A_DIRECTORY'),
  PathIsNotEmptyDirectoryException: permanent('WAREHOUSE_DIRECTORY_NOT_EMPTY'),
  // A writer that died still holds the lease (soft limit 60 s, then lease recovery): waiting is
  // not the answer, a fresh name is.
  AlreadyBeingCreatedException: permanent('WAREHOUSE_FILE_BUSY'),
  RecoveryInProgressException: permanent('WAREHOUSE_FILE_BUSY'),
  LeaseExpiredException: permanent('WAREHOUSE_FILE_BUSY'),
  // The NameNode is starting, failing over or asking to be asked again: nothing was done.
  SafeModeException: transient,
  RetriableException: transient,
  StandbyException: transient,
  ObserverRetryOnActiveException: transient,
  ServerTooBusyException: transient,
  AccessControlException: permanent('WAREHOUSE_ACCESS_DENIED'),
  AuthorizationException: permanent('WAREHOUSE_ACCESS_DENIED'),
  SecurityException: permanent('WAREHOUSE_ACCESS_DENIED'),
  QuotaExceededException: permanent('WAREHOUSE_QUOTA_EXCEEDED'),
  NSQuotaExceededException: permanent('WAREHOUSE_QUOTA_EXCEEDED'),
  DSQuotaExceededException: permanent('WAREHOUSE_QUOTA_EXCEEDED'),
  InvalidPathException: permanent('WAREHOUSE_INVALID_PATH'),
};

const UNKNOWN: RemoteExceptionMeaning = permanent('WAREHOUSE_ERROR');

/**
 * The meaning of a RemoteException. Two refinements read the message: HDFS reports a path that
 * runs through a file on reads and deletes as AccessControlException "… (is not a directory)"
 * (even with permissions off), which is the same fault as ParentNotDirectoryException on writes;
 * and a NameNode with no DataNode to redirect a create or read to answers a bare IOException
 * "Failed to find datanode, suggest to check cluster health", which is what every NameNode says
 * in the seconds after its restart, before the DataNodes have registered again: nothing was
 * done, and asking again soon succeeds (if it lasts, the DataNodes are down).
 */
export function meaningOf(remote: RemoteExceptionInfo): RemoteExceptionMeaning {
  const name = simpleName(remote.exception);
  if (name === 'AccessControlException' && remote.message.endsWith('(is not a directory)')) {
    return permanent('WAREHOUSE_PARENT_NOT_DIRECTORY');
  }
  if (name === 'IOException' && remote.message.startsWith('Failed to find datanode')) return transient;
  return REMOTE_EXCEPTION_MEANINGS[name] ?? UNKNOWN;
}

/** The RemoteException in a WebHDFS response body, if it holds one; the message cut to its first line. */
export function parseRemoteException(body: string): RemoteExceptionInfo | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return undefined;
  }
  const remote = (parsed as { RemoteException?: unknown } | null)?.RemoteException;
  if (typeof remote !== 'object' || remote === null) return undefined;
  const { exception, javaClassName, message } = remote as Record<string, unknown>;
  if (typeof exception !== 'string') return undefined;
  return {
    exception,
    ...(typeof javaClassName === 'string' ? { javaClassName } : {}),
    message: typeof message === 'string' ? (message.split('\n')[0] ?? '').trim() : '',
  };
}

/** `org.apache.hadoop.fs.FileAlreadyExistsException` and `FileAlreadyExistsException` alike. */
function simpleName(exception: string): string {
  return exception.slice(exception.lastIndexOf('.') + 1);
}
