/**
 * Kafka framing: every request and response is `Size INT32` (bytes that follow) + that many bytes.
 *
 * FrameDecoder turns a stream of chunks into whole frames. The declared size is checked against
 * the limit as soon as its 4 bytes arrive, before any buffer for the frame is allocated, so a
 * hostile size cannot make the process allocate it (Kafka's socket.request.max.bytes).
 */
import { MalformedMessageError } from './wire.js';

export class FrameTooLargeError extends MalformedMessageError {
  constructor(size: number, limit: number) {
    super(`frame declares ${size} bytes, above the limit of ${limit} (socket.request.max.bytes)`, { size, limit });
  }
}

export class FrameDecoder {
  private chunks: Buffer[] = [];
  private buffered = 0;
  private expected = -1;

  /**
   * @param allocate where a frame spread over several chunks is copied to (the broker lends pooled
   *   buffers and takes them back once the request is done).
   */
  constructor(private maxFrameBytes: number, private readonly allocate: (size: number) => Buffer = (size) => Buffer.allocUnsafe(size)) {}

  /** Changes the limit for frames whose size has not been read yet (a SASL listener raises it after authentication). */
  setMaxFrameBytes(bytes: number): void {
    this.maxFrameBytes = bytes;
  }

  /** Bytes held for an incomplete frame. */
  get pendingBytes(): number {
    return this.buffered;
  }

  /**
   * Feeds a chunk; returns the frames it completed (without their size prefix). A bad size prefix
   * does not throw away the frames before it: they are returned, and `failure` tells the caller
   * to close the connection once it has answered them.
   */
  push(chunk: Buffer): Buffer[] {
    const frames: Buffer[] = [];
    if (this.failure !== undefined) return frames;
    this.chunks.push(chunk);
    this.buffered += chunk.length;
    for (;;) {
      if (this.expected < 0) {
        if (this.buffered < 4) break;
        const size = this.peekInt32();
        if (size < 0) {
          this.fail(new MalformedMessageError(`frame declares a negative size ${size}`));
          break;
        }
        if (size > this.maxFrameBytes) {
          this.fail(new FrameTooLargeError(size, this.maxFrameBytes));
          break;
        }
        this.consume(4);
        this.expected = size;
      }
      if (this.buffered < this.expected) break;
      frames.push(this.consume(this.expected));
      this.expected = -1;
    }
    return frames;
  }

  /** Why the stream cannot be read any further, once it cannot. */
  failure: MalformedMessageError | undefined;

  private fail(error: MalformedMessageError): void {
    this.failure = error;
    this.chunks = [];
    this.buffered = 0;
  }

  private peekInt32(): number {
    const first = this.chunks[0];
    if (first !== undefined && first.length >= 4) return first.readInt32BE(0);
    return Buffer.concat(this.chunks, 4).readInt32BE(0);
  }

  /** Removes and returns the next `count` buffered bytes (a view when one chunk holds them). */
  private consume(count: number): Buffer {
    const first = this.chunks[0];
    let result: Buffer;
    if (first !== undefined && first.length >= count) {
      result = first.subarray(0, count);
      if (first.length === count) this.chunks.shift();
      else this.chunks[0] = first.subarray(count);
    } else {
      result = this.allocate(count);
      let filled = 0;
      while (filled < count) {
        const chunk = this.chunks[0];
        if (chunk === undefined) throw new Error('frame decoder ran out of buffered bytes');
        const take = Math.min(chunk.length, count - filled);
        chunk.copy(result, filled, 0, take);
        filled += take;
        if (take === chunk.length) this.chunks.shift();
        else this.chunks[0] = chunk.subarray(take);
      }
    }
    this.buffered -= count;
    return result;
  }
}
