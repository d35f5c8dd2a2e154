/**
 * How many client connections a broker holds at once: `max.connections` over every listener and
 * `max.connections.per.ip` from one address (Kafka's settings, both unlimited by default as in
 * Kafka). A connection over either limit is closed as soon as it is accepted, before a byte of
 * it is read, so a flood costs the broker a descriptor for a moment, not a connection's buffers.
 * (Kafka blocks its acceptor at `max.connections` instead; closing keeps one listener's flood
 * from stalling the others, and the client sees the same thing: a connection that does not serve.)
 */
import type { Logger } from '../common/logger.js';

export type ConnectionRefusal = 'max.connections' | 'max.connections.per.ip';

export class ConnectionLimits {
  private total = 0;
  private readonly perAddress = new Map<string, number>();

  constructor(
    private readonly maxConnections: number,
    private readonly maxPerAddress: number,
  ) {}

  /** Takes a slot for a connection from `address`, or says which limit refuses it. */
  admit(address: string): ConnectionRefusal | undefined {
    if (this.total >= this.maxConnections) return 'max.connections';
    const fromAddress = this.perAddress.get(address) ?? 0;
    if (fromAddress >= this.maxPerAddress) return 'max.connections.per.ip';
    this.total += 1;
    this.perAddress.set(address, fromAddress + 1);
    return undefined;
  }

  /** Gives back the slot of a connection `admit` let in. */
  release(address: string): void {
    this.total -= 1;
    const fromAddress = (this.perAddress.get(address) ?? 1) - 1;
    if (fromAddress <= 0) this.perAddress.delete(address);
    else this.perAddress.set(address, fromAddress);
  }

  get connections(): number {
    return this.total;
  }
}

/** Logs refused connections at most once per interval, with how many were refused since (a flood must not flood the log). */
export class RefusalLog {
  private refusedSince = 0;
  private lastLogged = -Infinity;

  constructor(
    private readonly logger: Logger,
    private readonly intervalMs = 10_000,
  ) {}

  note(listener: string, address: string, limit: ConnectionRefusal): void {
    this.refusedSince += 1;
    const now = Date.now();
    if (now - this.lastLogged < this.intervalMs) return;
    this.logger.warn({ listener, remote: address, limit, refused: this.refusedSince }, `connection refused: the broker is at its ${limit} limit (raise the setting if these clients are legitimate)`);
    this.refusedSince = 0;
    this.lastLogged = now;
  }
}
