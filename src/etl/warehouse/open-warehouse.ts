/**
 * Opens the warehouse a load's configuration names, by URL:
 *
 * - `webhdfs://HOST[:PORT][/ROOT][?user=NAME]`: HDFS through WebHDFS at the NameNode's HTTP
 *   address (PORT defaults to 9870, Hadoop 3's), every path under the HDFS folder /ROOT (default
 *   `/`), acting as NAME (default: the cluster's static user). ROOT is percent-decoded.
 * - `file:///ABSOLUTE/PATH` (or `file://localhost/…`): a local folder.
 * - a bare path, `/absolute/path` or `relative/path`: a local folder; a relative path is taken
 *   from `baseDirectory` (default: the working directory).
 *
 * Anything else (`hdfs://` RPC, `swebhdfs://`, `http://`, a query on a file URL) is refused with
 * the forms above in the message.
 */
import { isAbsolute, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { warehouseError } from './errors.js';
import { LocalWarehouse } from './local-warehouse.js';
import { parseWarehousePath } from './paths.js';
import type { WarehouseFileSystem } from './warehouse.js';
import { WebHdfsWarehouse, type WebHdfsWarehouseOptions } from './webhdfs-warehouse.js';

export const DEFAULT_WEBHDFS_PORT = 9870;

export type WarehouseLocation =
  | { readonly kind: 'webhdfs'; readonly nameNodeUrl: string; readonly root: string; readonly user?: string }
  | { readonly kind: 'local'; readonly root: string };

export interface OpenWarehouseOptions extends Omit<WebHdfsWarehouseOptions, 'nameNodeUrl' | 'root'> {
  /** Where a relative bare path starts. Default: the working directory. */
  readonly baseDirectory?: string;
}

const FORMS = 'Use webhdfs://HOST[:PORT][/ROOT][?user=NAME] for HDFS, or file:///ABSOLUTE/PATH or a plain path for a local folder';

export function parseWarehouseUrl(url: string, baseDirectory: string = process.cwd()): WarehouseLocation {
  const invalid = (why: string): Error =>
    warehouseError('WAREHOUSE_INVALID_URL', { operation: 'open warehouse', path: '', location: JSON.stringify(url), explanation: `${why}. ${FORMS}` });
  if (typeof url !== 'string' || url.trim() === '') throw invalid('the warehouse URL is empty');
  const scheme = /^([a-zA-Z][a-zA-Z0-9+.-]*):/.exec(url)?.[1]?.toLowerCase();
  if (scheme === undefined) return { kind: 'local', root: isAbsolute(url) ? resolve(url) : resolve(baseDirectory, url) };

  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw invalid('it is not a valid URL');
  }
  if (parsed.username !== '' || parsed.password !== '') throw invalid('credentials do not belong in the URL');
  if (parsed.hash !== '') throw invalid('a #fragment has no meaning here');

  if (scheme === 'file') {
    if (parsed.search !== '') throw invalid('a file URL takes no query');
    try {
      return { kind: 'local', root: fileURLToPath(parsed) };
    } catch {
      throw invalid('a file URL must name a local absolute path (file:///path or file://localhost/path)');
    }
  }
  if (scheme !== 'webhdfs') {
    const hint = scheme === 'hdfs' ? 'HDFS RPC (hdfs://) is not spoken; give the NameNode HTTP address as webhdfs://' : `the scheme ${scheme}: is not supported`;
    throw invalid(hint);
  }

  if (parsed.hostname === '') throw invalid('the NameNode host is missing');
  const port = parsed.port === '' ? DEFAULT_WEBHDFS_PORT : Number(parsed.port);
  const users = parsed.searchParams.getAll('user');
  const unknown = [...new Set(parsed.searchParams.keys())].filter((key) => key !== 'user');
  if (unknown.length > 0) throw invalid(`unknown query parameter${unknown.length > 1 ? 's' : ''} ${unknown.join(', ')} (only user= is known)`);
  if (users.length > 1) throw invalid('user= is given more than once');
  const user = users[0];
  if (user?.trim() === '') throw invalid('user= is empty');

  let segments: string[];
  try {
    segments = parsed.pathname.split('/').filter((segment) => segment !== '').map((segment) => decodeURIComponent(segment));
  } catch {
    throw invalid('the root path has a malformed %-escape');
  }
  const root = `/${parseWarehousePath(segments.join('/'), 'open warehouse', url).normal}`;
  return {
    kind: 'webhdfs',
    nameNodeUrl: `http://${parsed.hostname.includes(':') && !parsed.hostname.startsWith('[') ? `[${parsed.hostname}]` : parsed.hostname}:${port}`,
    root,
    ...(user === undefined ? {} : { user }),
  };
}

export function openWarehouse(url: string, options: OpenWarehouseOptions = {}): WarehouseFileSystem {
  const location = parseWarehouseUrl(url, options.baseDirectory);
  if (location.kind === 'local') return new LocalWarehouse(location.root);
  const { baseDirectory: _baseDirectory, user: optionsUser, ...clientOptions } = options;
  if (location.user !== undefined && optionsUser !== undefined && location.user !== optionsUser) {
    throw warehouseError('WAREHOUSE_INVALID_URL', {
      operation: 'open warehouse',
      path: '',
      location: JSON.stringify(url),
      explanation: `the URL says user=${location.user} but the options say ${optionsUser}; give the user in one place`,
    });
  }
  const user = location.user ?? optionsUser;
  return new WebHdfsWarehouse({ ...clientOptions, nameNodeUrl: location.nameNodeUrl, root: location.root, ...(user === undefined ? {} : { user }) });
}
