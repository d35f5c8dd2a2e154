/**
 * The cleaner's key map (Kafka's SkimpyOffsetMap): key → offset of its latest record in the part
 * of the log one pass reads, in bounded memory. A slot is 24 bytes: the key's MD5 (16 bytes) and
 * the offset (8 bytes), with open addressing and linear probing; there are no deletes.
 *
 * Keys are stored by digest, not whole, so memory is bounded by the slot count whatever the key
 * sizes. Two keys with the same MD5 would be taken for one; Kafka accepts the same risk.
 *
 * The table starts small and doubles (rehashing) up to `maxSlots`, the dedupe buffer's worth, so a
 * broker with many small compacted partitions does not hold the whole buffer for each pass.
 *
 * MD5 comes from hash-wasm: a pass digests every key twice (map, then filter), and node:crypto's
 * per-call setup made that most of a pass (2.7 µs a key against 0.6 µs, measured on 1 M short keys).
 */
import { createMD5 } from 'hash-wasm';

/** One MD5 hasher for the process: JavaScript runs one digest at a time. */
const md5 = await createMD5();

export const DIGEST_BYTES = 16;
export const SLOT_BYTES = DIGEST_BYTES + 8;
const INITIAL_SLOTS = 1 << 12;
const WORDS = DIGEST_BYTES / 4;

export class KeyOffsetMap {
  private slots: number;
  /** Each slot's digest as four 32-bit words: compared without a Buffer call per probe. */
  private words: Uint32Array;
  private offsets: Float64Array;
  private entries = 0;
  /** Largest offset put so far; −1 when empty. */
  latestOffset = -1;

  /**
   * @param maxSlots   slots the dedupe buffer holds (bytes ÷ 24)
   * @param loadFactor share of the slots filled before the map counts as full (Kafka's 0.9)
   */
  constructor(
    readonly maxSlots: number,
    readonly loadFactor: number,
  ) {
    if (Math.min(Math.floor(maxSlots * loadFactor), maxSlots - 1) < 1) {
      throw new RangeError(`a key map of ${maxSlots} slots at load factor ${loadFactor} holds no key; raise log.cleaner.dedupe.buffer.size`);
    }
    this.slots = Math.min(INITIAL_SLOTS, maxSlots);
    this.words = new Uint32Array(this.slots * WORDS);
    this.offsets = new Float64Array(this.slots).fill(-1);
  }

  /** Keys the map holds. */
  get size(): number {
    return this.entries;
  }

  /** Keys it may hold in all: put refuses nothing below this. */
  get capacity(): number {
    // One slot always stays empty, so a probe for a missing key ends.
    return Math.min(Math.floor(this.maxSlots * this.loadFactor), this.maxSlots - 1);
  }

  /** Bytes its table takes now (grows up to maxSlots × 24). */
  get bytes(): number {
    return this.slots * SLOT_BYTES;
  }

  /** Room for `count` more keys, counting each as new. */
  hasRoomFor(count: number): boolean {
    return this.entries + count <= this.capacity;
  }

  /** The key's MD5: 16 bytes, the caller's to keep. */
  static digest(key: Uint8Array): Uint8Array {
    md5.init();
    md5.update(key);
    return md5.digest('binary');
  }

  /** Records `offset` as the latest of the key with this digest; the caller checks `hasRoomFor` first. */
  put(digest: Uint8Array, offset: number): void {
    if (this.entries + 1 > Math.min(Math.floor(this.slots * this.loadFactor), this.slots - 1) && this.slots < this.maxSlots) this.grow();
    const w0 = wordAt(digest, 0);
    const w1 = wordAt(digest, 4);
    const w2 = wordAt(digest, 8);
    const w3 = wordAt(digest, 12);
    const slot = this.find(w0, w1, w2, w3);
    if (this.offsets[slot] === -1) {
      if (this.entries >= this.capacity) throw new RangeError('the key map is full');
      this.entries += 1;
      this.store(slot, w0, w1, w2, w3);
    }
    this.offsets[slot] = offset;
    if (offset > this.latestOffset) this.latestOffset = offset;
  }

  /** The latest offset of the key with this digest, or −1 when the map does not hold it. */
  get(digest: Uint8Array): number {
    return this.offsets[this.find(wordAt(digest, 0), wordAt(digest, 4), wordAt(digest, 8), wordAt(digest, 12))] ?? -1;
  }

  clear(): void {
    this.offsets.fill(-1);
    this.entries = 0;
    this.latestOffset = -1;
  }

  /** The digest's slot, or the empty slot where it would go (compared as four 32-bit words). */
  private find(w0: number, w1: number, w2: number, w3: number): number {
    const words = this.words;
    let slot = w0 % this.slots;
    for (;;) {
      if (this.offsets[slot] === -1) return slot;
      const at = slot * WORDS;
      if (words[at] === w0 && words[at + 1] === w1 && words[at + 2] === w2 && words[at + 3] === w3) return slot;
      slot = slot + 1 === this.slots ? 0 : slot + 1;
    }
  }

  private store(slot: number, w0: number, w1: number, w2: number, w3: number): void {
    const at = slot * WORDS;
    this.words[at] = w0;
    this.words[at + 1] = w1;
    this.words[at + 2] = w2;
    this.words[at + 3] = w3;
  }

  private grow(): void {
    const oldWords = this.words;
    const oldOffsets = this.offsets;
    this.slots = Math.min(this.slots * 2, this.maxSlots);
    this.words = new Uint32Array(this.slots * WORDS);
    this.offsets = new Float64Array(this.slots).fill(-1);
    for (let slot = 0; slot < oldOffsets.length; slot += 1) {
      const offset = oldOffsets[slot] ?? -1;
      if (offset === -1) continue;
      const at = slot * WORDS;
      const w0 = oldWords[at] ?? 0;
      const w1 = oldWords[at + 1] ?? 0;
      const w2 = oldWords[at + 2] ?? 0;
      const w3 = oldWords[at + 3] ?? 0;
      const target = this.find(w0, w1, w2, w3);
      this.store(target, w0, w1, w2, w3);
      this.offsets[target] = offset;
    }
  }
}

/** Bytes `at` to `at + 3` of a digest as a big-endian unsigned 32-bit word. */
function wordAt(digest: Uint8Array, at: number): number {
  return (((digest[at] ?? 0) << 24) | ((digest[at + 1] ?? 0) << 16) | ((digest[at + 2] ?? 0) << 8) | (digest[at + 3] ?? 0)) >>> 0;
}
