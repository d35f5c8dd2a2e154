/**
 * Warehouse paths: relative to the warehouse root, `/`-separated. Empty segments (a leading,
 * trailing or doubled `/`) are ignored; `.` and `..` are refused rather than resolved, so no path
 * can leave the root and every path has one spelling; `:` is refused because HDFS refuses it
 * (both backends accept the same names); NUL is refused everywhere.
 */
import { warehouseError } from './errors.js';

/** A validated path: its segments, and its normal form (`''` for the root). */
export interface WarehousePath {
  readonly segments: readonly string[];
  readonly normal: string;
}

export function parseWarehousePath(path: string, operation: string, where: string): WarehousePath {
  const invalid = (why: string): Error =>
    warehouseError('WAREHOUSE_INVALID_PATH', {
      operation,
      path: String(path),
      location: `${JSON.stringify(path)} in ${where}`,
      explanation: `${why}. Warehouse paths are relative to the root, separated by '/', without '.', '..', ':' or NUL`,
    });
  if (typeof path !== 'string') throw invalid(`expected a string, got ${typeof path}`);
  if (path.includes('\0')) throw invalid('the path contains a NUL character');
  const segments = path.split('/').filter((segment) => segment !== '');
  for (const segment of segments) {
    if (segment === '.' || segment === '..') throw invalid(`the segment '${segment}' is not allowed (paths may not leave the root)`);
    if (segment.includes(':')) throw invalid(`the segment '${segment}' contains ':', which HDFS refuses`);
  }
  return { segments, normal: segments.join('/') };
}

export function isRoot(path: WarehousePath): boolean {
  return path.segments.length === 0;
}

export function parentOf(path: WarehousePath): WarehousePath {
  const segments = path.segments.slice(0, -1);
  return { segments, normal: segments.join('/') };
}

export function nameOf(path: WarehousePath): string {
  return path.segments.at(-1) ?? '';
}

export function childOf(path: WarehousePath, name: string): WarehousePath {
  const segments = [...path.segments, name];
  return { segments, normal: segments.join('/') };
}

/** Whether `inner` is `outer` or lies under it. */
export function isWithin(inner: WarehousePath, outer: WarehousePath): boolean {
  return outer.segments.every((segment, index) => inner.segments[index] === segment) && inner.segments.length >= outer.segments.length;
}

/** Byte order of the UTF-8 names, the order HDFS lists in; both backends sort this way. */
export function compareNames(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}
