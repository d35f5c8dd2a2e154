/**
 * Compares records read back by another reader with the records written, value for value: numbers
 * by Object.is (NaN equals NaN, −0 is not 0), bytes by content, objects by their own keys whatever
 * their prototype (avsc decodes records into classes). Answers the differences as readable lines,
 * so one failing assertion lists the first few instead of diffing thousands of records.
 */

export function sameValue(left: unknown, right: unknown): boolean {
  if (typeof left === 'number' || typeof right === 'number') return Object.is(left, right);
  if (left instanceof Uint8Array || right instanceof Uint8Array) {
    return left instanceof Uint8Array && right instanceof Uint8Array && Buffer.compare(Buffer.from(left), Buffer.from(right)) === 0;
  }
  if (Array.isArray(left) || Array.isArray(right)) {
    return Array.isArray(left) && Array.isArray(right) && left.length === right.length && left.every((item, index) => sameValue(item, right[index]));
  }
  if (left !== null && right !== null && typeof left === 'object' && typeof right === 'object') {
    const leftKeys = Object.keys(left);
    const rightKeys = Object.keys(right);
    return leftKeys.length === rightKeys.length && leftKeys.every((key) => Object.hasOwn(right, key) && sameValue((left as Record<string, unknown>)[key], (right as Record<string, unknown>)[key]));
  }
  return left === right;
}

/** Up to `limit` lines `record 3 field score: read NaN, wrote 1.5`, plus a count of rows that differ. */
export function recordDifferences(read: readonly unknown[], wrote: readonly Record<string, unknown>[], limit = 10): string[] {
  const lines: string[] = [];
  if (read.length !== wrote.length) lines.push(`read ${read.length} records, wrote ${wrote.length}`);
  let differing = 0;
  wrote.forEach((record, index) => {
    const got = (read[index] ?? {}) as Record<string, unknown>;
    const fields = Object.keys(record).filter((field) => !sameValue(got[field], record[field]));
    if (fields.length === 0) return;
    differing += 1;
    for (const field of fields) {
      if (lines.length < limit) lines.push(`record ${index} field ${field}: read ${shown(got[field])}, wrote ${shown(record[field])}`);
    }
  });
  if (differing > 0) lines.push(`${differing} of ${wrote.length} records differ`);
  return lines;
}

export function shown(value: unknown): string {
  const text = JSON.stringify(value, (_key, item: unknown) => {
    if (typeof item === 'number' && !Number.isFinite(item)) return String(item);
    if (typeof item === 'number' && Object.is(item, -0)) return '-0';
    if (typeof item === 'bigint') return `${item}n`;
    if (item !== null && typeof item === 'object' && (item as { type?: unknown }).type === 'Buffer') return `0x${Buffer.from((item as { data: number[] }).data).toString('hex')}`;
    return item;
  });
  return text === undefined ? String(value) : text.length > 200 ? `${text.slice(0, 200)}…` : text;
}
