/**
 * Avro binary encodings of records back to back in one scratch buffer, reused for every block:
 * the bytes of `type.toBuffer(record)` each, without an allocation per record. Shared by the Avro
 * container's blocks and the rows a Parquet row group waits with.
 */
import type { Type } from 'avsc';

export class EncodingBuffer {
  private buffer: Buffer;
  /** Bytes in use, from the start. */
  length = 0;

  constructor(initialBytes: number) {
    this.buffer = Buffer.allocUnsafe(initialBytes);
  }

  /** Appends the encoding of `record` (valid for `type`); answers its size. */
  append(type: Type, record: unknown): number {
    let end = type.encode(record, this.buffer, this.length);
    while (end < 0) {
      // avsc answers minus the bytes missing: grow, keep what is there, again.
      const larger = Buffer.allocUnsafe(Math.max(2 * this.buffer.length, this.buffer.length - end));
      this.buffer.copy(larger, 0, 0, this.length);
      this.buffer = larger;
      end = type.encode(record, this.buffer, this.length);
    }
    const added = end - this.length;
    this.length = end;
    return added;
  }

  /** The bytes in use, as a view of the scratch buffer (valid until the next append or clear). */
  view(): Buffer {
    return this.buffer.subarray(0, this.length);
  }

  clear(): void {
    this.length = 0;
  }
}
