/**
 * The origin audit field: the server a record was created on, carried in a record header that our
 * producer adds (ProducerOptions.origin). Records from other clients have no such header; the
 * audit counts them under UNKNOWN_ORIGIN.
 */
import { ORIGIN_HEADER } from '../client/producer.js';
import type { RecordHeader } from '../protocol/records.js';

export { ORIGIN_HEADER };

/** The origin of records without the header (kcat, kafkajs, …). */
export const UNKNOWN_ORIGIN = 'unknown';

/** The record's origin server, or UNKNOWN_ORIGIN; an empty or null header value counts as unknown. */
export function originOf(headers: readonly RecordHeader[] | undefined): string {
  if (headers === undefined) return UNKNOWN_ORIGIN;
  for (const header of headers) {
    if (header.key === ORIGIN_HEADER) return header.value === null || header.value.length === 0 ? UNKNOWN_ORIGIN : header.value.toString('utf8');
  }
  return UNKNOWN_ORIGIN;
}
