/**
 * The warehouse on HDFS through WebHDFS, Hadoop's REST API (`/webhdfs/v1/<path>?op=…`, see
 * Hadoop's WebHDFS.md), with the semantics of warehouse.ts. Our own small client: the `webhdfs`
 * npm package is built on the deprecated `request` library (and its redirect handling), so we do
 * not use it.
 *
 * Calls: NameNode requests with Node's fetch; the DataNode half of CREATE and OPEN with node:http
 * (webhdfs-datanode.ts says why). The NameNode is asked with `noredirect=true`, so it answers the
 * DataNode location as JSON instead of a 307 whose Location header carries raw UTF-8 bytes.
 *
 * - CREATE: GETFILESTATUS first, so an existing name fails at once (the DataNode refuses it only
 *   after it has started reading the body, and its 403 can be lost when it closes the connection
 *   on a body still being sent); skipped for names the caller declares fresh (CreateOptions in
 *   warehouse.ts: staging names with a random attempt id). Then
 *   `PUT ?op=CREATE&overwrite=false&noredirect=true` to the NameNode (it only picks a DataNode),
 *   then the bytes to the DataNode, which creates the file without overwriting: 201, or a
 *   RemoteException. The DataNode answers only once the NameNode closed the file; on Hadoop 3
 *   that often costs 0.4 s whatever the file's size (when the block report has not reached the
 *   NameNode yet, the DataNode's client waits
 *   `dfs.client.block.write.locateFollowingBlock.initial.delay.ms` before it asks again), so
 *   callers that write many files write several at once.
 * - Connections: the NameNode calls share fetch's keep-alive pool; the DataNode answers CREATE
 *   with `connection: close`, so each upload opens its own connection (no agent can reuse it).
 * - RENAME: `renameoptions=NONE` selects HDFS's strict rename (rename/3), which fails with a
 *   precise exception instead of the plain `{"boolean":false}` of rename/2 and never moves a file
 *   into an existing directory. A FileNotFoundException is told apart (source vs target parent) by
 *   reading the source; a missing target parent is made and the rename tried once more.
 *   A `{"boolean":false}` from a server that ignores the option is resolved the same way.
 * - Errors branch on the RemoteException name, never the HTTP status
 *   (webhdfs-remote-exceptions.ts).
 * - Retries, with bounded exponential backoff, only for calls that change nothing: GETFILESTATUS,
 *   LISTSTATUS, OPEN, MKDIRS and the NameNode half of CREATE. CREATE, RENAME and DELETE are sent
 *   once; if their answer is lost (timeout, broken connection), HDFS is read to learn what
 *   happened (webhdfs-outcomes.ts), never repeated blindly.
 * - A CREATE that failed midway may leave a file open under its name, leased to a dead writer;
 *   callers write every attempt under a fresh name and never write to the same name again.
 * - Every NameNode request has a timeout; DataNode transfers have an idle timeout.
 *
 * Path encoding: each segment is percent-encoded (encodeURIComponent), in the URL path and in
 * the `destination` parameter alike. `+` must be sent as `%2B`: WebHDFS decodes a raw `+` in a
 * query parameter as a space.
 */
import type { Readable } from 'node:stream';
import { PassThrough } from 'node:stream';
import { TributaryError } from '../../common/errors.js';
import { createLogger, type Logger } from '../../common/logger.js';
import { DataSourceError } from './data.js';
import { hasWarehouseCode, warehouseError, type RemoteExceptionInfo, type WarehouseErrorCode } from './errors.js';
import { childOf, compareNames, isRoot, isWithin, nameOf, parentOf, parseWarehousePath, type WarehousePath } from './paths.js';
import { DEFAULT_RETRY_POLICY, withRetries, type RetryPolicy } from './retry.js';
import type { CreateOptions, DeleteOptions, WarehouseData, WarehouseEntry, WarehouseFileSystem } from './warehouse.js';
import { DataNodeTransportError, getFromDataNode, IdleTimeoutError, putToDataNode } from './webhdfs-datanode.js';
import { judgeLostCreate, judgeLostRename, type FoundFile } from './webhdfs-outcomes.js';
import { meaningOf, parseRemoteException } from './webhdfs-remote-exceptions.js';

export interface WebHdfsWarehouseOptions {
  /** The NameNode's HTTP address, `http://host:port` (WebHDFS lives under `/webhdfs/v1`). */
  readonly nameNodeUrl: string;
  /** The HDFS folder every warehouse path is under; absolute. Default `/`. */
  readonly root?: string;
  /** Sent as `user.name` (simple authentication); without it HDFS uses its static user. */
  readonly user?: string;
  /** Limit for each NameNode request, answer body included. Default 30 s. */
  readonly requestTimeoutMs?: number;
  /** A DataNode transfer with no bytes moving for this long fails. Default 60 s. */
  readonly dataIdleTimeoutMs?: number;
  /** Backoff for the calls that are safe to repeat. */
  readonly retry?: Partial<RetryPolicy>;
  readonly logger?: Logger;
}

type Method = 'GET' | 'PUT' | 'DELETE';

interface NameNodeCall {
  readonly operation: string;
  /** The path errors are about, and the one in the URL unless `pathInUrl` says otherwise. */
  readonly subject: WarehousePath;
  readonly pathInUrl?: WarehousePath;
  readonly op: string;
  readonly method: Method;
  readonly params?: Readonly<Record<string, string>>;
  readonly details?: Readonly<Record<string, unknown>>;
}

interface FileStatusJson {
  readonly pathSuffix: string;
  readonly type: string;
  readonly length: number;
  readonly modificationTime: number;
}

/** Connection errors that mean the request never reached the server. */
const NOT_SENT_CODES: ReadonlySet<string> = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);

export class WebHdfsWarehouse implements WarehouseFileSystem {
  private readonly nameNode: URL;
  private readonly root: WarehousePath;
  private readonly user: string | undefined;
  private readonly requestTimeoutMs: number;
  private readonly dataIdleTimeoutMs: number;
  private readonly retryPolicy: RetryPolicy;
  private readonly logger: Logger;

  constructor(options: WebHdfsWarehouseOptions) {
    this.nameNode = parseNameNodeUrl(options.nameNodeUrl);
    const root = options.root ?? '/';
    if (!root.startsWith('/')) {
      throw warehouseError('WAREHOUSE_INVALID_URL', {
        operation: 'open warehouse',
        path: '',
        location: JSON.stringify(root),
        explanation: 'the HDFS root must be an absolute path (starting with /)',
      });
    }
    this.root = parseWarehousePath(root, 'open warehouse', `webhdfs://${this.nameNode.host}`);
    this.user = options.user;
    this.requestTimeoutMs = options.requestTimeoutMs ?? 30_000;
    this.dataIdleTimeoutMs = options.dataIdleTimeoutMs ?? 60_000;
    this.retryPolicy = { ...DEFAULT_RETRY_POLICY, ...options.retry };
    this.logger = options.logger ?? createLogger({ name: 'warehouse', level: 'warn' });
  }

  describe(path?: string): string {
    const segments = [...this.root.segments, ...(path === undefined ? [] : path.split('/').filter((segment) => segment !== ''))];
    return `webhdfs://${this.nameNode.host}/${segments.join('/')}`;
  }

  async create(path: string, data: WarehouseData, options: CreateOptions = {}): Promise<void> {
    const target = this.parse(path, 'create');
    if (isRoot(target)) throw this.error('WAREHOUSE_INVALID_PATH', 'create', target, { explanation: 'the root is a directory; name a file under it' });
    // The DataNode refuses an existing name only after it has started reading the body, and may
    // close the connection before its 403 is read; asking first keeps that answer unambiguous.
    // A fresh name cannot exist, so the question would only cost a round trip.
    if (options.fresh !== true && (await this.statAs(target, 'create')) !== undefined) throw this.error('WAREHOUSE_FILE_EXISTS', 'create', target);
    const answer = await this.repeatable(() =>
      this.call({ operation: 'create', subject: target, op: 'CREATE', method: 'PUT', params: { overwrite: 'false', noredirect: 'true' } }),
    );
    const location = this.dataNodeLocation(answer, 'create', target);
    let upload;
    try {
      upload = await putToDataNode(location, data, this.dataIdleTimeoutMs);
    } catch (error) {
      if (error instanceof DataSourceError) {
        throw this.error('WAREHOUSE_DATA_FAILED', 'create', target, {
          cause: error.cause,
          reason: `${error.message}; a partial file may be left under this name on HDFS`,
        });
      }
      if (error instanceof DataNodeTransportError) return this.resolveLostCreate(target, error);
      throw error;
    }
    if (upload.status === 201) return;
    const refused = this.answerError('create', target, upload.status, upload.body, 'the DataNode');
    if (refused.code !== 'WAREHOUSE_UNAVAILABLE' && refused.code !== 'WAREHOUSE_ERROR') throw refused;
    // The NameNode half created the file; the DataNode then failed on trouble of its own (its
    // calls to a restarting NameNode broke: `SocketException … Connection reset`, which means
    // nothing in particular elsewhere). The name may hold an empty file, leased to this attempt:
    // the same call would find it taken, a fresh name may succeed (fresh-name.ts).
    const remote = parseRemoteException(upload.body);
    throw this.error('WAREHOUSE_CREATE_INCOMPLETE', 'create', target, {
      cause: refused,
      reason: `the DataNode failed the upload after the NameNode created the file (${remote === undefined ? `HTTP ${upload.status}` : `HDFS said ${remote.exception}: ${remote.message}`})`,
      ...(remote === undefined ? {} : { remoteException: remote }),
      details: { httpStatus: upload.status },
    });
  }

  async rename(from: string, to: string): Promise<void> {
    const source = this.parse(from, 'rename');
    const target = this.parse(to, 'rename');
    const both = { from: source.normal, to: target.normal };
    if (isRoot(source) || isRoot(target)) {
      throw this.error('WAREHOUSE_INVALID_PATH', 'rename', isRoot(source) ? source : target, { explanation: 'the root cannot be renamed or replaced', details: both });
    }
    if (source.normal === target.normal) {
      const exists = (await this.statAs(source, 'rename')) !== undefined;
      throw exists
        ? this.error('WAREHOUSE_FILE_EXISTS', 'rename', target, { reason: 'the source and the target are the same path', details: both })
        : this.error('WAREHOUSE_NOT_FOUND', 'rename', source, { reason: 'the source does not exist', details: both });
    }
    if (isWithin(target, source)) throw this.error('WAREHOUSE_INVALID_PATH', 'rename', target, { explanation: 'a directory cannot be moved under itself', details: both });
    await this.renameOnce(source, target, both, false);
  }

  async mkdirs(path: string): Promise<void> {
    const directory = this.parse(path, 'mkdirs');
    const answer = await this.repeatable(() => this.call({ operation: 'mkdirs', subject: directory, op: 'MKDIRS', method: 'PUT' }));
    if (booleanOf(answer) !== true) throw this.unexpected('mkdirs', directory, answer);
  }

  async list(path: string): Promise<WarehouseEntry[]> {
    const directory = this.parse(path, 'list');
    const answer = await this.repeatable(() => this.call({ operation: 'list', subject: directory, op: 'LISTSTATUS', method: 'GET' }));
    const statuses = (answer as { FileStatuses?: { FileStatus?: unknown } } | undefined)?.FileStatuses?.FileStatus;
    if (!Array.isArray(statuses)) throw this.unexpected('list', directory, answer);
    // LISTSTATUS of a file answers the file itself, with an empty name.
    if (statuses.length === 1 && isFileStatus(statuses[0]) && statuses[0].pathSuffix === '' && statuses[0].type !== 'DIRECTORY') {
      throw this.error('WAREHOUSE_NOT_A_DIRECTORY', 'list', directory);
    }
    return statuses
      .map((status: unknown) => {
        if (!isFileStatus(status) || status.pathSuffix === '') throw this.unexpected('list', directory, status);
        return entryOf(childOf(directory, status.pathSuffix), status);
      })
      .sort((a, b) => compareNames(a.name, b.name));
  }

  async open(path: string): Promise<Buffer> {
    const stream = await this.openStream(path);
    const chunks: Buffer[] = [];
    for await (const chunk of stream as AsyncIterable<Buffer>) chunks.push(chunk);
    return Buffer.concat(chunks);
  }

  async openStream(path: string): Promise<Readable> {
    const file = this.parse(path, 'open');
    try {
      return await this.repeatable(async () => {
        const answer = await this.call({ operation: 'open', subject: file, op: 'OPEN', method: 'GET', params: { noredirect: 'true' } });
        const location = this.dataNodeLocation(answer, 'open', file);
        let reply;
        try {
          reply = await getFromDataNode(location, this.dataIdleTimeoutMs);
        } catch (error) {
          throw this.error('WAREHOUSE_UNAVAILABLE', 'open', file, { cause: error, reason: describeTransport(error, this.dataIdleTimeoutMs) });
        }
        if (!('stream' in reply)) throw this.answerError('open', file, reply.status, reply.body, 'the DataNode');
        const output = new PassThrough();
        reply.stream.on('error', (error) => {
          output.destroy(this.error('WAREHOUSE_UNAVAILABLE', 'open', file, { cause: error, reason: `reading the file broke off: ${describeTransport(error, this.dataIdleTimeoutMs)}; open it again` }));
        });
        output.on('close', () => reply.stream.destroy());
        return reply.stream.pipe(output);
      });
    } catch (error) {
      // OPEN of a directory fails on the DataNode as FileNotFoundException "Path is not a file".
      if (hasWarehouseCode(error, 'WAREHOUSE_NOT_FOUND')) {
        const entry = await this.statAs(file, 'open').catch(() => undefined);
        if (entry?.type === 'directory') throw this.error('WAREHOUSE_NOT_A_FILE', 'open', file, { cause: error });
      }
      throw error;
    }
  }

  async stat(path: string): Promise<WarehouseEntry | undefined> {
    return this.statAs(this.parse(path, 'stat'), 'stat');
  }

  async delete(path: string, options: DeleteOptions = {}): Promise<boolean> {
    const doomed = this.parse(path, 'delete');
    if (isRoot(doomed)) throw this.error('WAREHOUSE_INVALID_PATH', 'delete', doomed, { explanation: 'refusing to delete the warehouse root; delete what is under it' });
    let answer: unknown;
    try {
      answer = await this.call({ operation: 'delete', subject: doomed, op: 'DELETE', method: 'DELETE', params: { recursive: String(options.recursive === true) } });
    } catch (error) {
      if (!isAnswerLost(error)) throw error;
      return this.resolveLostDelete(doomed, error);
    }
    const existed = booleanOf(answer);
    if (existed === undefined) throw this.unexpected('delete', doomed, answer);
    return existed;
  }

  private async renameOnce(source: WarehousePath, target: WarehousePath, both: Readonly<Record<string, string>>, madeParent: boolean): Promise<void> {
    let answer: unknown;
    try {
      answer = await this.call({
        operation: 'rename',
        subject: target,
        pathInUrl: source,
        op: 'RENAME',
        method: 'PUT',
        params: { destination: this.hdfsPath(target), renameoptions: 'NONE' },
        details: both,
      });
    } catch (error) {
      if (isAnswerLost(error)) return this.resolveLostRename(source, target, both, error);
      if (hasWarehouseCode(error, 'WAREHOUSE_NOT_FOUND')) {
        // Either the source or the target's parent is missing; HDFS says which only in prose.
        if ((await this.statAs(source, 'rename')) === undefined) throw this.error('WAREHOUSE_NOT_FOUND', 'rename', source, { cause: error, reason: 'the source does not exist', details: both });
        if (madeParent) throw error;
        await this.mkdirs(parentOf(target).normal);
        return this.renameOnce(source, target, both, true);
      }
      // A file onto a directory (or back) fails as a bare IOException ("must both be directories").
      if (hasWarehouseCode(error, 'WAREHOUSE_ERROR') && (await this.statAs(target, 'rename')) !== undefined) {
        throw this.error('WAREHOUSE_FILE_EXISTS', 'rename', target, { cause: error, details: both });
      }
      throw error;
    }
    if (answer === undefined || booleanOf(answer) === true) return;
    // `{"boolean":false}`: a server that ignored renameoptions and used rename/2. Find out why.
    if ((await this.statAs(source, 'rename')) === undefined) throw this.error('WAREHOUSE_NOT_FOUND', 'rename', source, { reason: 'the source does not exist', details: both });
    if ((await this.statAs(target, 'rename')) !== undefined) throw this.error('WAREHOUSE_FILE_EXISTS', 'rename', target, { details: both });
    if (!madeParent && (await this.statAs(parentOf(target), 'rename')) === undefined) {
      await this.mkdirs(parentOf(target).normal);
      return this.renameOnce(source, target, both, true);
    }
    throw this.error('WAREHOUSE_ERROR', 'rename', target, { reason: 'HDFS refused the rename ({"boolean":false}) without saying why', details: both });
  }

  private async resolveLostCreate(target: WarehousePath, lost: DataNodeTransportError): Promise<void> {
    const transport = describeTransport(lost.cause, this.dataIdleTimeoutMs);
    let found: FoundFile | undefined;
    try {
      found = await this.findFile(target);
    } catch (probeError) {
      throw this.error('WAREHOUSE_OUTCOME_UNKNOWN', 'create', target, { cause: probeError, reason: `the DataNode connection failed (${transport}) and reading the file back failed too` });
    }
    const attempt = { sentBytes: lost.sentBytes, sentAll: lost.sentAll };
    const verdict = judgeLostCreate(attempt, found);
    const details = { ...attempt, found: found ?? null, verdict };
    if (verdict === 'created') {
      this.logger.info({ path: target.normal, ...details }, 'the answer to a CREATE was lost; HDFS shows the whole file, so it was created');
      return;
    }
    throw this.error('WAREHOUSE_CREATE_INCOMPLETE', 'create', target, {
      cause: lost,
      reason: verdict === 'absent'
        ? `the DataNode connection failed (${transport}) and HDFS shows no file yet`
        : `the DataNode connection failed (${transport}); HDFS shows ${found?.length ?? 0} of ${lost.sentBytes}${lost.sentAll ? '' : '+'} bytes${found?.underConstruction === false ? '' : ', possibly still open'}`,
      details,
    });
  }

  private async resolveLostRename(source: WarehousePath, target: WarehousePath, both: Readonly<Record<string, string>>, lost: TributaryError): Promise<void> {
    let sourceExists: boolean;
    let targetExists: boolean;
    try {
      sourceExists = (await this.statAs(source, 'rename')) !== undefined;
      targetExists = (await this.statAs(target, 'rename')) !== undefined;
    } catch (probeError) {
      throw this.error('WAREHOUSE_OUTCOME_UNKNOWN', 'rename', target, { cause: probeError, reason: `the answer was lost (${lost.message}) and reading HDFS back failed too`, details: both });
    }
    const verdict = judgeLostRename(sourceExists, targetExists);
    const details = { ...both, verdict };
    switch (verdict) {
      case 'renamed':
        this.logger.info({ ...details }, 'the answer to a RENAME was lost; HDFS shows it done');
        return;
      case 'not-renamed':
        throw this.error('WAREHOUSE_UNAVAILABLE', 'rename', target, { cause: lost, reason: 'the answer was lost and HDFS shows the source in place and no target: the rename did not happen', details });
      case 'target-exists':
        throw this.error('WAREHOUSE_FILE_EXISTS', 'rename', target, { cause: lost, reason: 'the answer was lost; HDFS shows both the source and the target', details });
      case 'unknown':
        throw this.error('WAREHOUSE_OUTCOME_UNKNOWN', 'rename', target, { cause: lost, reason: 'the answer was lost and HDFS shows neither the source nor the target', details });
    }
  }

  private async resolveLostDelete(doomed: WarehousePath, lost: TributaryError): Promise<boolean> {
    let entry: WarehouseEntry | undefined;
    try {
      entry = await this.statAs(doomed, 'delete');
    } catch (probeError) {
      throw this.error('WAREHOUSE_OUTCOME_UNKNOWN', 'delete', doomed, { cause: probeError, reason: `the answer was lost (${lost.message}) and reading HDFS back failed too` });
    }
    if (entry !== undefined) throw this.error('WAREHOUSE_UNAVAILABLE', 'delete', doomed, { cause: lost, reason: 'the answer was lost and the path is still there: it was not deleted' });
    // Gone now; whether it was there before the lost call cannot be known, and "gone" is what the caller wanted.
    this.logger.info({ path: doomed.normal }, 'the answer to a DELETE was lost; HDFS shows the path gone');
    return true;
  }

  /** GETFILESTATUS, with errors reported as part of `operation`. */
  private async statAs(entry: WarehousePath, operation: string): Promise<WarehouseEntry | undefined> {
    return this.repeatable(async () => {
      let answer: unknown;
      try {
        answer = await this.call({ operation, subject: entry, op: 'GETFILESTATUS', method: 'GET' });
      } catch (error) {
        if (hasWarehouseCode(error, 'WAREHOUSE_NOT_FOUND')) return undefined;
        throw error;
      }
      const status = (answer as { FileStatus?: unknown } | undefined)?.FileStatus;
      if (!isFileStatus(status)) throw this.unexpected(operation, entry, answer);
      return entryOf(entry, status);
    });
  }

  /** The file's length and whether it is still open, or undefined if there is none. */
  private async findFile(file: WarehousePath): Promise<FoundFile | undefined> {
    const entry = await this.statAs(file, 'create');
    if (entry === undefined) return undefined;
    if (entry.type !== 'file') return { length: entry.length, underConstruction: undefined };
    const blocks = await this.repeatable(() => this.call({ operation: 'create', subject: file, op: 'GET_BLOCK_LOCATIONS', method: 'GET' })).catch(() => undefined);
    const underConstruction = (blocks as { LocatedBlocks?: { isUnderConstruction?: unknown } } | undefined)?.LocatedBlocks?.isUnderConstruction;
    return { length: entry.length, underConstruction: typeof underConstruction === 'boolean' ? underConstruction : undefined };
  }

  /** One NameNode request: the parsed JSON answer (undefined for an empty body), or a warehouse error. */
  private async call(call: NameNodeCall): Promise<unknown> {
    const url = this.urlOf(call.pathInUrl ?? call.subject, call.op, call.params ?? {});
    let status: number;
    let body: string;
    try {
      const response = await fetch(url, { method: call.method, redirect: 'manual', signal: AbortSignal.timeout(this.requestTimeoutMs) });
      status = response.status;
      body = await response.text();
    } catch (error) {
      throw this.error('WAREHOUSE_UNAVAILABLE', call.operation, call.subject, {
        cause: error,
        reason: `the NameNode ${this.nameNode.host} did not answer ${call.op}: ${describeTransport(error, this.requestTimeoutMs)}`,
        details: { ...call.details, answerLost: !neverSent(error) },
      });
    }
    if (status < 200 || status > 299) throw this.answerError(call.operation, call.subject, status, body, `the NameNode (${call.op})`, call.details);
    if (body.trim() === '') return undefined;
    try {
      return JSON.parse(body) as unknown;
    } catch (error) {
      throw this.error('WAREHOUSE_ERROR', call.operation, call.subject, { cause: error, reason: `the NameNode answered ${call.op} with something other than JSON: ${body.slice(0, 200)}` });
    }
  }

  private repeatable<T>(action: () => Promise<T>): Promise<T> {
    return withRetries(this.retryPolicy, action, {
      onRetry: (error, failedAttempt, delayMs) => this.logger.warn({ err: error, failedAttempt, delayMs }, 'WebHDFS call failed; retrying'),
    });
  }

  /** An error answer: the RemoteException if there is one, else the HTTP status. */
  private answerError(operation: string, subject: WarehousePath, status: number, body: string, from: string, details?: Readonly<Record<string, unknown>>): TributaryError {
    const remote = parseRemoteException(body);
    if (remote !== undefined) {
      const meaning = meaningOf(remote);
      return this.error(meaning.code, operation, subject, {
        reason: `HDFS said ${remote.exception}: ${remote.message}`,
        retriable: meaning.retriable,
        remoteException: remote,
        details: { ...details, httpStatus: status },
      });
    }
    // No RemoteException: a proxy or a server in trouble. Gateway errors may pass.
    const retriable = status === 502 || status === 503 || status === 504;
    return this.error(retriable ? 'WAREHOUSE_UNAVAILABLE' : 'WAREHOUSE_ERROR', operation, subject, {
      reason: `${from} answered HTTP ${status}: ${body.slice(0, 200)}`,
      retriable,
      details: { ...details, httpStatus: status },
    });
  }

  private dataNodeLocation(answer: unknown, operation: string, subject: WarehousePath): URL {
    const location = (answer as { Location?: unknown } | undefined)?.Location;
    if (typeof location !== 'string') throw this.unexpected(operation, subject, answer);
    try {
      return new URL(location);
    } catch (error) {
      throw this.error('WAREHOUSE_ERROR', operation, subject, { cause: error, reason: `the NameNode named an invalid DataNode location ${JSON.stringify(location)}` });
    }
  }

  private unexpected(operation: string, subject: WarehousePath, answer: unknown): TributaryError {
    return this.error('WAREHOUSE_ERROR', operation, subject, { reason: `unexpected WebHDFS answer: ${JSON.stringify(answer)?.slice(0, 200)}` });
  }

  private parse(path: string, operation: string): WarehousePath {
    return parseWarehousePath(path, operation, this.describe());
  }

  private hdfsPath(path: WarehousePath): string {
    return `/${[...this.root.segments, ...path.segments].join('/')}`;
  }

  private urlOf(path: WarehousePath, op: string, params: Readonly<Record<string, string>>): string {
    const encodedPath = [...this.root.segments, ...path.segments].map(encodeURIComponent).join('/');
    const query = [['op', op], ...(this.user === undefined ? [] : [['user.name', this.user]]), ...Object.entries(params)]
      .map(([key, value]) => `${encodeURIComponent(key ?? '')}=${encodeURIComponent(value ?? '')}`)
      .join('&');
    return new URL(`/webhdfs/v1/${encodedPath}?${query}`, this.nameNode).href;
  }

  private error(
    code: WarehouseErrorCode,
    operation: string,
    subject: WarehousePath,
    extra: {
      cause?: unknown;
      reason?: string;
      explanation?: string;
      retriable?: boolean;
      remoteException?: RemoteExceptionInfo;
      details?: Readonly<Record<string, unknown>>;
    } = {},
  ): TributaryError {
    return warehouseError(code, {
      operation,
      path: subject.normal,
      location: this.describe(subject.normal),
      ...(extra.cause === undefined ? {} : { cause: extra.cause }),
      ...(extra.reason === undefined ? {} : { reason: extra.reason }),
      ...(extra.explanation === undefined ? {} : { explanation: extra.explanation }),
      ...(extra.retriable === undefined ? {} : { retriable: extra.retriable }),
      ...(extra.remoteException === undefined ? {} : { remoteException: extra.remoteException }),
      ...(extra.details === undefined ? {} : { details: extra.details }),
    });
  }
}

/** Whether a warehouse error says the request may have reached HDFS but its answer did not come back. */
export function isAnswerLost(error: unknown): error is TributaryError {
  return error instanceof TributaryError && error.details['answerLost'] === true;
}

function parseNameNodeUrl(nameNodeUrl: string): URL {
  let url: URL | undefined;
  try {
    url = new URL(nameNodeUrl);
  } catch {
    url = undefined;
  }
  if (url === undefined || url.protocol !== 'http:' || url.hostname === '' || url.username !== '' || url.search !== '' || url.hash !== '' || url.pathname !== '/') {
    throw warehouseError('WAREHOUSE_INVALID_URL', {
      operation: 'open warehouse',
      path: '',
      location: JSON.stringify(nameNodeUrl),
      explanation: 'expected the NameNode HTTP address as http://host:port, with nothing after the port',
    });
  }
  return url;
}

function isFileStatus(value: unknown): value is FileStatusJson {
  if (typeof value !== 'object' || value === null) return false;
  const status = value as Record<string, unknown>;
  return typeof status['pathSuffix'] === 'string' && typeof status['type'] === 'string' && typeof status['length'] === 'number' && typeof status['modificationTime'] === 'number';
}

function entryOf(path: WarehousePath, status: FileStatusJson): WarehouseEntry {
  const directory = status.type === 'DIRECTORY';
  return { name: nameOf(path), path: path.normal, type: directory ? 'directory' : 'file', length: directory ? 0 : status.length, modifiedAt: status.modificationTime };
}

function booleanOf(answer: unknown): boolean | undefined {
  const value = (answer as { boolean?: unknown } | undefined)?.boolean;
  return typeof value === 'boolean' ? value : undefined;
}

function neverSent(error: unknown): boolean {
  const code = systemCodeOf(error);
  return code !== undefined && NOT_SENT_CODES.has(code);
}

/** The first `code` string down the cause chain (undici puts the socket error in `cause`). */
function systemCodeOf(error: unknown): string | undefined {
  for (let current = error, depth = 0; current instanceof Error && depth < 5; current = current.cause, depth += 1) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string') return code;
    // Several addresses tried at once: the first one's error stands for all.
    if (current instanceof AggregateError) {
      const innerCode = (current.errors[0] as { code?: unknown } | undefined)?.code;
      if (typeof innerCode === 'string') return innerCode;
    }
  }
  return undefined;
}

function describeTransport(error: unknown, timeoutMs: number): string {
  if (error instanceof Error && error.name === 'TimeoutError') return `no answer within ${timeoutMs} ms`;
  if (error instanceof IdleTimeoutError) return error.message;
  const inner = error instanceof DataNodeTransportError ? error.cause : error;
  if (inner instanceof IdleTimeoutError) return inner.message;
  const code = systemCodeOf(inner);
  // undici says only "fetch failed"; the socket error is its cause.
  const detailed = inner instanceof Error && inner.message === 'fetch failed' && inner.cause instanceof Error ? inner.cause : inner;
  const message = detailed instanceof Error ? detailed.message : String(detailed);
  return code === undefined || message.includes(code) ? message : `${message} (${code})`;
}
