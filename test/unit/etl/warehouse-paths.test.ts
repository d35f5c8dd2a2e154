/** Warehouse paths: one normal form, nothing that leaves the root, nothing HDFS refuses. */
import { describe, expect, it } from 'vitest';
import { TributaryError } from '../../../src/common/errors.js';
import { compareNames, isWithin, parentOf, parseWarehousePath } from '../../../src/etl/warehouse/paths.js';

const parse = (path: string) => parseWarehousePath(path, 'test', 'file:///root');

describe('parseWarehousePath', () => {
  it('ignores leading, trailing and doubled slashes', () => {
    expect(parse('/a//b/c/')).toEqual({ segments: ['a', 'b', 'c'], normal: 'a/b/c' });
    expect(parse('')).toEqual({ segments: [], normal: '' });
    expect(parse('///')).toEqual({ segments: [], normal: '' });
  });

  it('keeps every other character as it is', () => {
    expect(parse('t/p v+3+10+20.avro/k=v/%41/ü日').segments).toEqual(['t', 'p v+3+10+20.avro', 'k=v', '%41', 'ü日']);
  });

  it.each([
    ['..', "the segment '..' is not allowed"],
    ['a/../b', "the segment '..' is not allowed"],
    ['./a', "the segment '.' is not allowed"],
    ['a/b:c', "contains ':', which HDFS refuses"],
    ['a\0b', 'NUL'],
  ])('refuses %j, saying why and where', (path, why) => {
    let caught: unknown;
    try {
      parse(path);
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(TributaryError);
    const error = caught as TributaryError;
    expect(error.code).toBe('WAREHOUSE_INVALID_PATH');
    expect(error.message).toContain(why);
    expect(error.message).toContain(`${JSON.stringify(path)} in file:///root`);
    expect(error.details).toMatchObject({ path, operation: 'test' });
  });

  it('refuses a path that is not a string', () => {
    expect(() => parseWarehousePath(42 as unknown as string, 'test', 'file:///root')).toThrow(/expected a string, got number/);
  });
});

describe('path relations', () => {
  it('knows parents and containment by whole segments', () => {
    expect(parentOf(parse('a/b/c')).normal).toBe('a/b');
    expect(parentOf(parse('a')).normal).toBe('');
    expect(isWithin(parse('a/b/c'), parse('a/b'))).toBe(true);
    expect(isWithin(parse('a/b'), parse('a/b'))).toBe(true);
    expect(isWithin(parse('a/bc'), parse('a/b'))).toBe(false);
    expect(isWithin(parse('a'), parse('a/b'))).toBe(false);
  });

  it('orders names by their UTF-8 bytes, as HDFS lists them', () => {
    expect(['b', 'B', 'a', 'é', 'z', '_'].sort(compareNames)).toEqual(['B', '_', 'a', 'b', 'z', 'é']);
  });
});
