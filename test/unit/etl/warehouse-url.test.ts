/** Warehouse URLs: which backend, where, as whom — and precise refusals of everything else. */
import { describe, expect, it } from 'vitest';
import { TributaryError } from '../../../src/common/errors.js';
import { LocalWarehouse } from '../../../src/etl/warehouse/local-warehouse.js';
import { openWarehouse, parseWarehouseUrl } from '../../../src/etl/warehouse/open-warehouse.js';
import { WebHdfsWarehouse } from '../../../src/etl/warehouse/webhdfs-warehouse.js';

function refusal(url: string): TributaryError {
  try {
    parseWarehouseUrl(url, '/base');
  } catch (error) {
    expect(error).toBeInstanceOf(TributaryError);
    return error as TributaryError;
  }
  throw new Error(`expected ${url} to be refused`);
}

describe('parseWarehouseUrl', () => {
  it('reads webhdfs:// URLs: NameNode HTTP address, HDFS root and user', () => {
    expect(parseWarehouseUrl('webhdfs://nn.example:50070/data/warehouse?user=etl')).toEqual({
      kind: 'webhdfs',
      nameNodeUrl: 'http://nn.example:50070',
      root: '/data/warehouse',
      user: 'etl',
    });
  });

  it('defaults the port to 9870, the root to /, and leaves the user to the cluster', () => {
    expect(parseWarehouseUrl('webhdfs://nn.example')).toEqual({ kind: 'webhdfs', nameNodeUrl: 'http://nn.example:9870', root: '/' });
    expect(parseWarehouseUrl('webhdfs://nn.example:9871/')).toEqual({ kind: 'webhdfs', nameNodeUrl: 'http://nn.example:9871', root: '/' });
  });

  it('percent-decodes the root and normalizes its slashes', () => {
    expect(parseWarehouseUrl('webhdfs://h:1/my%20data//a%2Bb/')).toMatchObject({ root: '/my data/a+b' });
  });

  it('keeps IPv6 hosts bracketed', () => {
    expect(parseWarehouseUrl('webhdfs://[::1]:9870/w')).toMatchObject({ nameNodeUrl: 'http://[::1]:9870', root: '/w' });
  });

  it('reads file:// URLs and bare paths as local folders', () => {
    expect(parseWarehouseUrl('file:///srv/warehouse')).toEqual({ kind: 'local', root: '/srv/warehouse' });
    expect(parseWarehouseUrl('file://localhost/srv/warehouse')).toEqual({ kind: 'local', root: '/srv/warehouse' });
    expect(parseWarehouseUrl('file:///srv/my%20warehouse')).toEqual({ kind: 'local', root: '/srv/my warehouse' });
    expect(parseWarehouseUrl('/srv/warehouse/')).toEqual({ kind: 'local', root: '/srv/warehouse' });
    expect(parseWarehouseUrl('warehouse', '/base')).toEqual({ kind: 'local', root: '/base/warehouse' });
    expect(parseWarehouseUrl('./a/../warehouse', '/base')).toEqual({ kind: 'local', root: '/base/warehouse' });
  });

  it.each([
    ['', 'the warehouse URL is empty'],
    ['hdfs://nn:8020/w', 'HDFS RPC (hdfs://) is not spoken'],
    ['swebhdfs://nn:9871/w', 'the scheme swebhdfs: is not supported'],
    ['http://nn:9870/w', 'the scheme http: is not supported'],
    ['webhdfs://nn:9870/w?user=etl&replication=3', 'unknown query parameter replication'],
    ['webhdfs://nn:9870/w?user=a&user=b', 'user= is given more than once'],
    ['webhdfs://nn:9870/w?user=', 'user= is empty'],
    ['webhdfs://etl:secret@nn:9870/w', 'credentials do not belong in the URL'],
    ['webhdfs://nn:9870/w#x', 'a #fragment has no meaning here'],
    ['webhdfs://nn:99999/w', 'it is not a valid URL'],
    ['webhdfs://nn:9870/a/%E0%A4%A', 'malformed %-escape'],
    ['file://otherhost/srv', 'must name a local absolute path'],
    ['file:///srv?x=1', 'a file URL takes no query'],
  ])('refuses %j: %s', (url, why) => {
    const error = refusal(url);
    expect(error.code).toBe('WAREHOUSE_INVALID_URL');
    expect(error.message).toContain(why);
    expect(error.message).toContain(JSON.stringify(url));
    expect(error.message).toContain('webhdfs://HOST[:PORT][/ROOT][?user=NAME]');
  });

  it('refuses a root HDFS cannot hold, and resolves dot segments the way URLs do', () => {
    expect(() => parseWarehouseUrl('webhdfs://nn/a:b')).toThrow(/contains ':', which HDFS refuses/);
    expect(parseWarehouseUrl('webhdfs://nn/../../a/./b/../c')).toMatchObject({ root: '/a/c' });
  });
});

describe('openWarehouse', () => {
  it('opens the backend the URL names', () => {
    expect(openWarehouse('webhdfs://127.0.0.1:9870/w?user=etl')).toBeInstanceOf(WebHdfsWarehouse);
    expect(openWarehouse('webhdfs://127.0.0.1:9870/w').describe('a/b')).toBe('webhdfs://127.0.0.1:9870/w/a/b');
    const local = openWarehouse('relative/w', { baseDirectory: '/base' });
    expect(local).toBeInstanceOf(LocalWarehouse);
    expect(local.describe()).toBe('file:///base/relative/w');
  });

  it('refuses two different users from the URL and the options', () => {
    expect(() => openWarehouse('webhdfs://nn/w?user=etl', { user: 'other' })).toThrow(/user=etl but the options say other/);
    expect(openWarehouse('webhdfs://nn/w?user=etl', { user: 'etl' })).toBeInstanceOf(WebHdfsWarehouse);
  });
});
