/**
 * The fewest bytes one value of an Avro type can take in Avro binary, so that a reader can refuse
 * a block whose declared record count its bytes cannot hold before decoding any of them.
 */
import type { Type, types } from 'avsc';

export function minimumEncodedBytes(type: Type, visiting: ReadonlySet<Type> = new Set()): number {
  if (visiting.has(type)) return 0; // a recursive reference: counted where it was first met
  const inner = new Set(visiting).add(type);
  switch (type.typeName) {
    case 'null':
      return 0;
    case 'float':
      return 4;
    case 'double':
      return 8;
    case 'fixed':
      return (type as types.FixedType).size;
    case 'record':
    case 'error':
      return (type as types.RecordType).fields.reduce((sum, field) => sum + minimumEncodedBytes(field.type, inner), 0);
    case 'union:unwrapped':
    case 'union:wrapped':
      // The branch index (a long) is one byte at least, then the smallest branch.
      return 1 + Math.min(...(type as types.UnwrappedUnionType).types.map((branch) => minimumEncodedBytes(branch, inner)));
    default:
      if (type.typeName.startsWith('logical:')) return minimumEncodedBytes((type as types.LogicalType).underlyingType, inner);
      // boolean, int, long, enum: one byte; string, bytes: a length; array, map: a block count.
      return 1;
  }
}
