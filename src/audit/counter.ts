/**
 * One tier's audit counter: counts records per (topic, window of creation time, origin) and
 * publishes the counts as AuditCount events to the audit topic of its cluster.
 *
 * Counts survive restarts because every event is a DELTA with an identity:
 *
 * - A cut (each publish) moves the counts gathered since the previous cut into events, one per
 *   (topic, window, origin), each numbered (counterId, sequence). counterId is random per counter
 *   instance, so a restarted process never reuses a key; the sum of distinct keys is the count.
 *   A caller that recounts the same fixed input may pass a deterministic `counterId` instead (the
 *   loader: one per commit, etl/audit-tier.ts): counting the same records in the same order cuts
 *   the same keys again, so a recount replaces rather than adds.
 * - An event is encoded once and sent until acknowledged (acks=-1). A failed send keeps it, and
 *   the next publish sends the same bytes under the same key again; so do a producer retry after
 *   a lost answer and the mirror copying `_audit` at least once. Reconciliation keeps one event
 *   per key, so none of these double-counts.
 * - At-least-once components count what the target acknowledged, `await flush()`, then commit
 *   source offsets. A crash between flush and commit re-delivers records already counted: the
 *   report shows duplicates (>100%), never loss. A crash before flush loses both the unpublished
 *   counts and the uncommitted offsets, so the re-delivered records are counted again. (The
 *   mirror no longer re-delivers: it publishes per source range under range identities, so its
 *   recounts after a crash replace — src/mirror/range-audit.ts.)
 *
 * Windows close `latenessMs` after their end (reconciliation reports them final from then on).
 * A record of a closed window is still counted and published as a delta of that old window, and
 * counted in `lateRecords`.
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { AcknowledgedRecord, Acks, ProducerRecord } from '../client/producer.js';
import { systemClock, type Clock } from '../common/clock.js';
import { TributaryError } from '../common/errors.js';
import type { Logger } from '../common/logger.js';
import type { WriterSchemaInput } from '../registry/serde/serializer.js';
import { AUDIT_SUBJECT, AUDIT_TOPIC, AUDIT_TIERS, auditCountSchema, type AuditCountEvent, type AuditTier } from './audit-count.js';
import { latencyBucketBound } from './latency.js';
import { originOf } from './origin.js';
import { DEFAULT_LATENESS_MS, DEFAULT_WINDOW_MS, isWindowClosed, windowStartOf } from './windows.js';

/** Where events go: a Producer with acks=-1 on the counter's cluster. */
export interface AuditPublisher {
  readonly acks: Acks;
  send(topic: string, records: readonly ProducerRecord[]): Promise<unknown>;
}

/** Frames AuditCount values with the registry: an AvroSerializer. */
export interface AuditEncoder {
  encode(subject: string, value: unknown, schema?: WriterSchemaInput): Promise<Buffer>;
}

export const DEFAULT_PUBLISH_INTERVAL_MS = 30_000;

export interface AuditCounterOptions {
  readonly tier: AuditTier;
  /**
   * The identity of this counter's events; random by default. Give a fixed one only when every
   * counter with that id counts exactly the same records in the same order (a recount), since
   * reconciliation keeps one event per (counterId, sequence).
   */
  readonly counterId?: string;
  readonly publisher: AuditPublisher;
  readonly encoder: AuditEncoder;
  /** The process's host name by default. */
  readonly server?: string;
  /** Name of the cluster the counter runs in (online or offline); null for producers. */
  readonly cluster?: string;
  readonly windowMs?: number;
  readonly latenessMs?: number;
  /** Publish this often; 0 publishes only on flush() and close(). */
  readonly publishIntervalMs?: number;
  readonly auditTopic?: string;
  readonly clock?: Clock;
  readonly logger?: Logger;
}

/** Counts of one (topic, origin, window) since the last cut. */
interface Cell {
  readonly topic: string;
  readonly origin: string;
  readonly windowStart: number;
  count: number;
  /** bucket upper bound → records */
  readonly latency: Map<number, number>;
}

/** An event cut and not yet acknowledged; `bytes` once encoded (then always resent as is). */
interface QueuedEvent {
  readonly event: AuditCountEvent;
  bytes: Buffer | undefined;
}

export class AuditCounter {
  readonly counterId: string;
  readonly tier: AuditTier;
  readonly server: string;
  readonly cluster: string | null;
  readonly windowMs: number;
  readonly latenessMs: number;
  readonly auditTopic: string;
  /** Pass as ProducerOptions.onAcknowledged: counts every acknowledged record at its ack time. */
  readonly observer: (topic: string, records: readonly AcknowledgedRecord[]) => void;

  private readonly publisher: AuditPublisher;
  private readonly encoder: AuditEncoder;
  private readonly clock: Clock;
  private readonly logger: Logger | undefined;
  /** topic → origin → window start → cell; emptied at every cut. */
  private cells = new Map<string, Map<string, Map<number, Cell>>>();
  /** The cell of the previous record: consecutive records usually share it. */
  private lastCell: Cell | undefined;
  private readonly queued: QueuedEvent[] = [];
  private nextSequence = 0;
  private late = 0;
  private publishTail: Promise<void> = Promise.resolve();
  private readonly timer: NodeJS.Timeout | undefined;
  private closing: Promise<void> | undefined;

  constructor(options: AuditCounterOptions) {
    this.tier = options.tier;
    this.counterId = options.counterId ?? randomUUID();
    this.server = options.server ?? hostname();
    this.cluster = options.cluster ?? null;
    this.windowMs = options.windowMs ?? DEFAULT_WINDOW_MS;
    this.latenessMs = options.latenessMs ?? DEFAULT_LATENESS_MS;
    this.auditTopic = options.auditTopic ?? AUDIT_TOPIC;
    this.publisher = options.publisher;
    this.encoder = options.encoder;
    this.clock = options.clock ?? systemClock;
    this.logger = options.logger;
    validate(options, this);
    this.observer = (topic, records) => this.countRecords(topic, records);
    const interval = options.publishIntervalMs ?? DEFAULT_PUBLISH_INTERVAL_MS;
    if (interval > 0) {
      this.timer = setInterval(() => {
        if (this.hasUnpublished()) this.flush().catch((error: unknown) => this.logger?.warn({ err: error, queued: this.queued.length }, 'audit publish failed; the next one sends the same events again'));
      }, interval);
      this.timer.unref();
    }
  }

  /** Records of closed windows counted so far (still counted and published). */
  get lateRecords(): number {
    return this.late;
  }

  /** Events cut and not yet acknowledged by the audit topic. */
  get unacknowledgedEvents(): number {
    return this.queued.length;
  }

  /** Counts records of `topic` seen now (or at `seenAt`): by their timestamp and origin header. */
  countRecords(topic: string, records: readonly AcknowledgedRecord[], seenAt = this.clock.now()): void {
    if (this.isAuditTopic(topic)) return;
    this.checkOpen();
    for (const record of records) this.add(topic, record.timestamp, originOf(record.headers), seenAt, 1);
  }

  /** Counts `records` records of `topic` created at `timestamp` on `origin`, seen at `seenAt`. */
  count(topic: string, timestamp: number, origin: string, seenAt = this.clock.now(), records = 1): void {
    if (this.isAuditTopic(topic)) return;
    this.checkOpen();
    if (!Number.isSafeInteger(records) || records < 0) {
      throw new TributaryError({ code: 'INVALID_ARGUMENT', message: `an audit count must be a non-negative integer, not ${records}` });
    }
    if (records > 0) this.add(topic, timestamp, origin, seenAt, records);
  }

  /**
   * Publishes every count made before this call and resolves once the audit topic acknowledged
   * it (acks=-1). Rejects (AUDIT_PUBLISH_FAILED, retriable) if it could not; the events are kept
   * and sent again, under the same keys, by the next flush.
   */
  flush(): Promise<void> {
    const run = this.publishTail.then(() => this.publishQueued());
    this.publishTail = run.catch(() => undefined);
    return run;
  }

  /** Stops the timer and publishes what is left; counting afterwards is refused. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      clearInterval(this.timer);
      await this.flush();
    })();
    return this.closing;
  }

  private isAuditTopic(topic: string): boolean {
    // Counting audit events would be circular; the mirror copies AUDIT_TOPIC too.
    return topic === this.auditTopic || topic === AUDIT_TOPIC;
  }

  private checkOpen(): void {
    if (this.closing !== undefined) {
      throw new TributaryError({ code: 'AUDIT_COUNTER_CLOSED', message: `the ${this.tier} audit counter ${this.counterId} is closed; close it after the component whose records it counts` });
    }
  }

  private add(topic: string, timestamp: number, origin: string, seenAt: number, records: number): void {
    const windowStart = windowStartOf(timestamp, this.windowMs);
    let cell = this.lastCell;
    if (cell === undefined || cell.windowStart !== windowStart || cell.origin !== origin || cell.topic !== topic) {
      cell = this.cellFor(topic, origin, windowStart);
      this.lastCell = cell;
    }
    cell.count += records;
    const bound = latencyBucketBound(seenAt - timestamp);
    cell.latency.set(bound, (cell.latency.get(bound) ?? 0) + records);
    if (isWindowClosed(windowStart + this.windowMs, this.latenessMs, seenAt)) this.late += records;
  }

  private cellFor(topic: string, origin: string, windowStart: number): Cell {
    let byOrigin = this.cells.get(topic);
    if (byOrigin === undefined) this.cells.set(topic, (byOrigin = new Map<string, Map<number, Cell>>()));
    let byWindow = byOrigin.get(origin);
    if (byWindow === undefined) byOrigin.set(origin, (byWindow = new Map<number, Cell>()));
    let cell = byWindow.get(windowStart);
    if (cell === undefined) byWindow.set(windowStart, (cell = { topic, origin, windowStart, count: 0, latency: new Map() }));
    return cell;
  }

  private hasUnpublished(): boolean {
    return this.cells.size > 0 || this.queued.length > 0;
  }

  /** Moves the counts since the previous cut into numbered events (synchronously: no count slips between). */
  private cut(): void {
    const cells = this.cells;
    this.cells = new Map();
    this.lastCell = undefined;
    const publishedAt = this.clock.now();
    for (const byOrigin of cells.values()) {
      for (const byWindow of byOrigin.values()) {
        for (const cell of byWindow.values()) {
          if (cell.count === 0) continue;
          const event: AuditCountEvent = {
            topic: cell.topic,
            tier: this.tier,
            cluster: this.cluster,
            server: this.server,
            windowStart: cell.windowStart,
            windowEnd: cell.windowStart + this.windowMs,
            count: cell.count,
            publishedAt,
            origin: cell.origin,
            counterId: this.counterId,
            sequence: this.nextSequence++,
            latency: [...cell.latency].sort(([a], [b]) => a - b).map(([upperBoundMs, count]) => ({ upperBoundMs, count })),
          };
          this.queued.push({ event, bytes: undefined });
        }
      }
    }
  }

  private async publishQueued(): Promise<void> {
    this.cut();
    if (this.queued.length === 0) return;
    const sending = [...this.queued];
    try {
      const schema = auditCountSchema();
      for (const queued of sending) queued.bytes ??= await this.encoder.encode(AUDIT_SUBJECT, queued.event, schema);
      await this.publisher.send(
        this.auditTopic,
        // Keyed by topic: a topic's events share a partition, and reports skip other topics undecoded.
        sending.map(({ event, bytes }) => ({ key: Buffer.from(event.topic, 'utf8'), value: bytes ?? null, timestamp: event.publishedAt })),
      );
    } catch (error) {
      throw new TributaryError({
        code: 'AUDIT_PUBLISH_FAILED',
        retriable: true,
        message: `the ${this.tier} audit counter could not publish ${sending.length} AuditCount events to "${this.auditTopic}": ${error instanceof Error ? error.message : String(error)}; they are kept and sent again by the next flush`,
        cause: error,
        details: { counterId: this.counterId, events: sending.length },
      });
    }
    this.queued.splice(0, sending.length);
    if (this.late > 0) this.logger?.debug({ lateRecords: this.late }, 'audit counted records of closed windows');
  }
}

function validate(options: AuditCounterOptions, counter: AuditCounter): void {
  const problems: string[] = [];
  if (options.counterId !== undefined && options.counterId.trim() === '') problems.push('counterId, when given, must not be empty');
  if (!(AUDIT_TIERS as readonly string[]).includes(options.tier)) problems.push(`tier must be one of ${AUDIT_TIERS.join(', ')}, not ${String(options.tier)}`);
  if (options.publisher.acks !== -1) problems.push(`the publisher must use acks=-1 (counts are the audit's evidence), not acks=${options.publisher.acks}`);
  if (!Number.isSafeInteger(counter.windowMs) || counter.windowMs <= 0) problems.push(`windowMs must be a positive integer, not ${counter.windowMs}`);
  if (!Number.isSafeInteger(counter.latenessMs) || counter.latenessMs < 0) problems.push(`latenessMs must be an integer ≥ 0, not ${counter.latenessMs}`);
  const interval = options.publishIntervalMs ?? DEFAULT_PUBLISH_INTERVAL_MS;
  if (!Number.isSafeInteger(interval) || interval < 0) problems.push(`publishIntervalMs must be an integer ≥ 0, not ${interval}`);
  if (problems.length > 0) throw new TributaryError({ code: 'CONFIG_INVALID', message: `audit counter options: ${problems.join('; ')}` });
}
