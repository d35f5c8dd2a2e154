/** max.connections and max.connections.per.ip: slots taken on accept, given back on close. */
import { describe, expect, it } from 'vitest';
import { ConnectionLimits } from '../../../src/broker/connection-limits.js';

describe('ConnectionLimits', () => {
  it('refuses past the per-address limit and past the total, and frees slots on release', () => {
    const limits = new ConnectionLimits(3, 2);
    expect(limits.admit('10.0.0.1')).toBeUndefined();
    expect(limits.admit('10.0.0.1')).toBeUndefined();
    expect(limits.admit('10.0.0.1')).toBe('max.connections.per.ip');
    expect(limits.admit('10.0.0.2')).toBeUndefined();
    expect(limits.admit('10.0.0.3')).toBe('max.connections');
    expect(limits.connections).toBe(3);
    limits.release('10.0.0.1');
    expect(limits.admit('10.0.0.3')).toBeUndefined();
    expect(limits.admit('10.0.0.1')).toBe('max.connections');
    limits.release('10.0.0.2');
    expect(limits.admit('10.0.0.1')).toBeUndefined();
    expect(limits.connections).toBe(3);
  });
});
