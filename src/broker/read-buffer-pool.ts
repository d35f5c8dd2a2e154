/**
 * Reusable buffers for the file ranges of Fetch responses. A consumer reading one partition with
 * ~200 KB fetches otherwise costs a fresh off-heap buffer per response — hundreds per second, each
 * a malloc the garbage collector must later find and free. A buffer goes back to the pool only when
 * the socket's write callback reports its bytes handed to the kernel, never while libuv may still
 * read it; one whose write failed is left to the garbage collector.
 */
export class ReadBufferPool {
  private readonly free: Buffer[] = [];

  /**
   * @param slabBytes size of every pooled buffer; longer requests get a buffer of their own.
   * @param maxFree most idle buffers kept (the pool's memory ceiling is slabBytes × maxFree).
   */
  constructor(readonly slabBytes: number, private readonly maxFree: number) {}

  /** A buffer of exactly `length` bytes (uninitialized) and the slab to hand back, if pooled. */
  take(length: number): { readonly bytes: Buffer; readonly slab: Buffer | undefined } {
    if (length > this.slabBytes) return { bytes: Buffer.allocUnsafeSlow(length), slab: undefined };
    const slab = this.free.pop() ?? Buffer.allocUnsafeSlow(this.slabBytes);
    return { bytes: slab.subarray(0, length), slab };
  }

  /** Returns a slab from `take` once nothing reads it any more. */
  give(slab: Buffer): void {
    if (slab.length === this.slabBytes && this.free.length < this.maxFree) this.free.push(slab);
  }

  get idle(): number {
    return this.free.length;
  }
}
