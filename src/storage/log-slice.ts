/**
 * What a read hands the network layer: whole batches of one segment as a file range, holding the
 * segment's descriptor open until the bytes have been sent.
 */
import { TributaryError } from '../common/errors.js';
import { readFully } from './batch-scan.js';
import type { LogSegment } from './segment.js';

/** Whole batches from one segment: `size` bytes of the segment file from `position`. */
export interface LogSlice {
  readonly fd: number;
  readonly path: string;
  readonly position: number;
  readonly size: number;
  /** Offset of the first batch in the slice (≤ the offset asked for). */
  readonly firstBatchOffset: number;
  /**
   * The lookup that made the slice read its headers from the page cache just now (at its start or
   * its end, in under CACHED_READ_MS): reading the slice at once will almost surely not wait for
   * the disk. False when that is not known (no header was read) or a read was slow.
   */
  readonly cached: boolean;
  /** Copies the slice into memory (tests and small tools; the broker streams `fd` instead). */
  readBytes(): Promise<Buffer>;
  /** Must be called once the bytes have been sent; keeps a deleted segment's file open until then. */
  release(): void;
}

/**
 * A LogSlice holding a reference to its segment from creation to `release`. A class rather than
 * an object of closures: a Fetch makes one per partition it returns.
 */
export class SegmentSlice implements LogSlice {
  readonly fd: number;
  private released = false;

  constructor(
    private readonly segment: LogSegment,
    readonly position: number,
    readonly size: number,
    readonly firstBatchOffset: number,
    readonly cached: boolean,
  ) {
    segment.retain();
    this.fd = segment.fd;
  }

  get path(): string {
    return this.segment.logPath;
  }

  async readBytes(): Promise<Buffer> {
    // The slice's reference keeps the descriptor open across the read; after release it may be gone.
    if (this.released) throw new TributaryError({ code: 'SLICE_RELEASED', message: `a slice of ${this.segment.logPath} was read after its release` });
    const bytes = Buffer.allocUnsafe(this.size);
    const read = await readFully(this.segment.fd, bytes, this.size, this.position);
    return bytes.subarray(0, read);
  }

  release(): void {
    if (this.released) return;
    this.released = true;
    this.segment.release();
  }
}
