/** In-process stand-ins for the counter's producer and serializer: they record what was sent. */
import type { ProducerRecord } from '../../../src/client/producer.js';
import type { AuditCountEvent } from '../../../src/audit/audit-count.js';
import type { AuditEncoder, AuditPublisher } from '../../../src/audit/counter.js';

/** Encodes an event as its JSON, so tests can read back exactly what was published. */
export class JsonEncoder implements AuditEncoder {
  readonly subjects: string[] = [];
  encode(subject: string, value: unknown): Promise<Buffer> {
    this.subjects.push(subject);
    return Promise.resolve(Buffer.from(JSON.stringify(value)));
  }
}

export class RecordingPublisher implements AuditPublisher {
  readonly acks = -1 as const;
  /** Every send that was attempted, acknowledged or not. */
  readonly attempts: { topic: string; records: readonly ProducerRecord[] }[] = [];
  /** Sends to fail (the records may have been stored all the same, as after a lost answer). */
  failNext = 0;
  private gate: Promise<void> | undefined;

  /** Sends wait (stay in flight) until the returned function is called. */
  holdSends(): () => void {
    let release: () => void = () => undefined;
    this.gate = new Promise((resolve) => (release = resolve));
    return () => {
      this.gate = undefined;
      release();
    };
  }

  async send(topic: string, records: readonly ProducerRecord[]): Promise<unknown> {
    this.attempts.push({ topic, records });
    if (this.gate !== undefined) await this.gate;
    if (this.failNext > 0) {
      this.failNext -= 1;
      throw new Error('the answer was lost');
    }
    return [];
  }

  /** The events of every attempt, in order (duplicates included). */
  events(): AuditCountEvent[] {
    return this.attempts.flatMap(({ records }) => records.map((record) => JSON.parse(record.value?.toString() ?? 'null') as AuditCountEvent));
  }

  /** The events of the last attempt. */
  lastEvents(): AuditCountEvent[] {
    return (this.attempts.at(-1)?.records ?? []).map((record) => JSON.parse(record.value?.toString() ?? 'null') as AuditCountEvent);
  }
}
