import { describe, expect, it } from 'vitest';
import { FrameDecoder, FrameTooLargeError } from '../../../src/protocol/framing.js';

function framed(...payloads: string[]): Buffer {
  return Buffer.concat(
    payloads.map((payload) => {
      const size = Buffer.alloc(4);
      size.writeInt32BE(Buffer.byteLength(payload));
      return Buffer.concat([size, Buffer.from(payload)]);
    }),
  );
}

describe('FrameDecoder', () => {
  it('returns whole frames however the bytes are split, one byte at a time included', () => {
    const bytes = framed('alpha', '', 'gamma-gamma');
    const decoder = new FrameDecoder(1024);
    const frames: string[] = [];
    for (const byte of bytes) frames.push(...decoder.push(Buffer.from([byte])).map((frame) => frame.toString()));
    expect(frames).toEqual(['alpha', '', 'gamma-gamma']);
    expect(decoder.pendingBytes).toBe(0);
    expect(decoder.failure).toBeUndefined();
  });

  it('refuses a declared size above the limit as soon as the 4 size bytes arrive', () => {
    const decoder = new FrameDecoder(100);
    expect(decoder.push(Buffer.from([0x7f, 0xff, 0xff, 0xff]))).toEqual([]);
    expect(decoder.failure).toBeInstanceOf(FrameTooLargeError);
    expect(decoder.pendingBytes).toBe(0);
  });

  it('keeps the frames that arrived before a bad size prefix, then stops reading', () => {
    const decoder = new FrameDecoder(1024);
    const frames = decoder.push(Buffer.concat([framed('first', 'second'), Buffer.from([0xff, 0xff, 0xff, 0xff]), framed('never')]));
    expect(frames.map((frame) => frame.toString())).toEqual(['first', 'second']);
    expect(decoder.failure?.message).toContain('negative size');
    expect(decoder.push(framed('later'))).toEqual([]);
  });
});
