/**
 * Whether a partition's log serves: its stage (open, closing, closed, deleted) and the failure
 * that took it offline, if any, with the checks and errors that refuse requests accordingly.
 * Apart from partition-log.ts because the write pipeline refuses work by the same rules and
 * must not import the log.
 */
import { KafkaProtocolError } from '../protocol/kafka-errors.js';

/**
 * open: serving. closing: a clean stop is flushing it (no new appends). closed: stopped, files
 * kept. deleted: its topic is gone; queued appends were refused and its files are being removed.
 */
export type LogState = 'open' | 'closing' | 'closed' | 'deleted';

export class LogStatus {
  state: LogState = 'open';
  /** A write, fsync or truncation that failed past undoing: the log is offline until restart and recovery. */
  failure: KafkaProtocolError | undefined;

  constructor(private readonly name: string) {}

  /** Closed or deleted: the log let its files go, so nothing may read or write them. */
  get stopped(): boolean {
    return this.state === 'closed' || this.state === 'deleted';
  }

  checkWritable(): void {
    if (this.state === 'deleted') throw this.unavailableError();
    if (this.failure !== undefined) throw this.failure;
    if (this.state !== 'open') throw this.unavailableError();
  }

  checkReadable(): void {
    if (this.stopped) throw this.unavailableError();
  }

  /** What a request to a log that stopped serving gets: a deleted topic is unknown, a stopped broker not the leader. */
  unavailableError(): KafkaProtocolError {
    if (this.state === 'deleted') {
      return new KafkaProtocolError('UNKNOWN_TOPIC_OR_PARTITION', `partition ${this.name} was deleted with its topic`);
    }
    return new KafkaProtocolError('NOT_LEADER_OR_FOLLOWER', `log ${this.name} is closed`);
  }
}
