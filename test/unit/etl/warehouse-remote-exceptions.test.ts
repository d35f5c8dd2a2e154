/**
 * The RemoteException name → warehouse code table of the WebHDFS warehouse, including the
 * retriable ones (safe mode, fail-over) that the shared HDFS must not be pushed into.
 */
import { describe, expect, it } from 'vitest';
import { meaningOf, parseRemoteException, REMOTE_EXCEPTION_MEANINGS } from '../../../src/etl/warehouse/webhdfs-remote-exceptions.js';

const remote = (exception: string, message = 'something happened') => ({ exception, message });

describe('RemoteException meanings', () => {
  it.each([
    ['FileAlreadyExistsException', 'WAREHOUSE_FILE_EXISTS', false],
    ['FileNotFoundException', 'WAREHOUSE_NOT_FOUND', false],
    ['ParentNotDirectoryException', 'WAREHOUSE_PARENT_NOT_DIRECTORY', false],
    ['PathIsNotDirectoryException', 'WAREHOUSE_NOT_A_DIRECTORY', false],
    ['PathIsNotEmptyDirectoryException', 'WAREHOUSE_DIRECTORY_NOT_EMPTY', false],
    ['AlreadyBeingCreatedException', 'WAREHOUSE_FILE_BUSY', false],
    ['RecoveryInProgressException', 'WAREHOUSE_FILE_BUSY', false],
    ['LeaseExpiredException', 'WAREHOUSE_FILE_BUSY', false],
    ['SafeModeException', 'WAREHOUSE_UNAVAILABLE', true],
    ['RetriableException', 'WAREHOUSE_UNAVAILABLE', true],
    ['StandbyException', 'WAREHOUSE_UNAVAILABLE', true],
    ['ObserverRetryOnActiveException', 'WAREHOUSE_UNAVAILABLE', true],
    ['AccessControlException', 'WAREHOUSE_ACCESS_DENIED', false],
    ['NSQuotaExceededException', 'WAREHOUSE_QUOTA_EXCEEDED', false],
    ['DSQuotaExceededException', 'WAREHOUSE_QUOTA_EXCEEDED', false],
    ['InvalidPathException', 'WAREHOUSE_INVALID_PATH', false],
  ] as const)('%s means %s (retriable: %s)', (exception, code, retriable) => {
    expect(meaningOf(remote(exception))).toEqual({ code, retriable });
  });

  it('reads fully qualified Java class names the same as simple ones', () => {
    expect(meaningOf(remote('org.apache.hadoop.hdfs.server.namenode.SafeModeException'))).toEqual({ code: 'WAREHOUSE_UNAVAILABLE', retriable: true });
    expect(meaningOf(remote('org.apache.hadoop.fs.FileAlreadyExistsException'))).toEqual({ code: 'WAREHOUSE_FILE_EXISTS', retriable: false });
  });

  it('treats unknown exceptions, and a bare IOException, as permanent WAREHOUSE_ERROR', () => {
    expect(meaningOf(remote('IOException'))).toEqual({ code: 'WAREHOUSE_ERROR', retriable: false });
    expect(meaningOf(remote('SomethingNewException'))).toEqual({ code: 'WAREHOUSE_ERROR', retriable: false });
  });

  it('reads an AccessControlException about traversing a file as a parent that is not a directory', () => {
    expect(meaningOf(remote('AccessControlException', '/warehouse/t/file.avro (is not a directory)'))).toEqual({
      code: 'WAREHOUSE_PARENT_NOT_DIRECTORY',
      retriable: false,
    });
    expect(meaningOf(remote('AccessControlException', 'Permission denied: user=etl, access=WRITE'))).toEqual({
      code: 'WAREHOUSE_ACCESS_DENIED',
      retriable: false,
    });
  });

  it('reads a NameNode with no DataNode registered yet (just restarted) as unavailable for now, not as a permanent error', () => {
    // The NameNode's answer to a create in the seconds after its restart (seen in `npm run chaos -- loader`).
    const noDataNode = remote('IOException', 'Failed to find datanode, suggest to check cluster health. excludeDatanodes=null');
    expect(meaningOf(noDataNode)).toEqual({ code: 'WAREHOUSE_UNAVAILABLE', retriable: true });
    expect(meaningOf(remote('IOException', 'Failed to replace a bad datanode on the existing pipeline'))).toEqual({ code: 'WAREHOUSE_ERROR', retriable: false });
  });

  it('marks only the "try again" exceptions retriable', () => {
    const retriable = Object.entries(REMOTE_EXCEPTION_MEANINGS).filter(([, meaning]) => meaning.retriable).map(([name]) => name).sort();
    expect(retriable).toEqual(['ObserverRetryOnActiveException', 'RetriableException', 'SafeModeException', 'ServerTooBusyException', 'StandbyException']);
  });
});

describe('parseRemoteException', () => {
  it('takes the exception, class and the first line of the message, without the stack trace', () => {
    const body = JSON.stringify({
      RemoteException: {
        exception: 'SafeModeException',
        javaClassName: 'org.apache.hadoop.hdfs.server.namenode.SafeModeException',
        message: 'Cannot create file /w/x. Name node is in safe mode.\n\tat org.apache.hadoop.hdfs.server.namenode.FSNamesystem.checkNameNodeSafeMode(FSNamesystem.java:1)\n',
      },
    });
    expect(parseRemoteException(body)).toEqual({
      exception: 'SafeModeException',
      javaClassName: 'org.apache.hadoop.hdfs.server.namenode.SafeModeException',
      message: 'Cannot create file /w/x. Name node is in safe mode.',
    });
  });

  it('finds nothing in bodies that are not a RemoteException', () => {
    expect(parseRemoteException('<html>502 Bad Gateway</html>')).toBeUndefined();
    expect(parseRemoteException('{"boolean":false}')).toBeUndefined();
    expect(parseRemoteException('{"RemoteException":{"message":"no name"}}')).toBeUndefined();
    expect(parseRemoteException('null')).toBeUndefined();
  });
});
