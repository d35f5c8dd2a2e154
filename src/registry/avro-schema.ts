/**
 * Parsing of submitted Avro schemas for the schema registry (stub; implementation follows).
 */
import type { Type } from 'avsc';

import { TributaryError } from '../common/errors.js';

export interface ParsedSchema {
  /** The submitted schema JSON, minified: what read endpoints return. */
  readonly text: string;
  readonly json: unknown;
  readonly type: Type;
  /** Canonical JSON used to deduplicate schemas. */
  readonly canonical: string;
  /** sha256 hex of `canonical`: same schema, same fingerprint, same global id. */
  readonly fingerprint: string;
}

export function parseAvroSchema(text: string, schemaType?: string): ParsedSchema {
  throw new TributaryError({
    code: 'NOT_IMPLEMENTED',
    message: `parseAvroSchema is not implemented yet (schema of ${text.length} chars, type ${schemaType ?? 'AVRO'})`,
  });
}
