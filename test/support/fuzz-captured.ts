/**
 * The protocol fuzzer's seed corpus: request frames real clients sent (kcat, kafkajs, Apache
 * Kafka's Java tools), captured by test/chaos/fuzz-capture.ts through a capturing proxy and
 * committed as fuzz-captured-frames.json beside this file (capturing needs the Java tools, about
 * a minute; `npx tsx test/chaos/fuzz-capture.ts` writes it again).
 *
 * `seedFrames` gives every captured frame for the `captured` class of the frame generator
 * (fuzz-frames.ts), which replays them mutated; `saslConversations` gives the conversations
 * captured on the SASL_PLAINTEXT listener, in order, for the SASL storm (fuzz-sasl.ts).
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The user the clients logged in as; the fuzzed SASL listeners know it with this password. */
export const CAPTURE_USER = 'fuzz-user';
export const CAPTURE_PASSWORD = 'fuzz-password-22';

export const CAPTURED_CORPUS_FILE = join(dirname(fileURLToPath(import.meta.url)), 'fuzz-captured-frames.json');

export interface CorpusFrame {
  /** The client run that sent it, e.g. `kcat-produce-gzip`, `java-console-consumer-group`. */
  readonly client: string;
  readonly listener: 'plaintext' | 'sasl';
  /** Captured on the SASL_SSL listener (PLAIN), decrypted by the proxy. */
  readonly tls: boolean;
  readonly connection: number;
  readonly index: number;
  /** The frame, size prefix included. */
  readonly hex: string;
}

export interface CapturedCorpus {
  readonly capturedAt: string;
  readonly user: string;
  readonly password: string;
  readonly clients: readonly string[];
  readonly frames: readonly CorpusFrame[];
}

/** One captured request, as the generator mutates it: header and body, no size prefix. */
export interface SeedFrame {
  readonly client: string;
  readonly body: Buffer;
}

export function loadCapturedCorpus(file = CAPTURED_CORPUS_FILE): CapturedCorpus {
  return JSON.parse(readFileSync(file, 'utf8')) as CapturedCorpus;
}

function seed(frame: CorpusFrame): SeedFrame {
  return { client: frame.client, body: Buffer.from(frame.hex, 'hex').subarray(4) };
}

/** Every captured frame, from both listeners. */
export function seedFrames(corpus: CapturedCorpus): SeedFrame[] {
  return corpus.frames.map(seed);
}

/** The connections captured on the SASL listener, each its frames in the order sent. */
export function saslConversations(corpus: CapturedCorpus): SeedFrame[][] {
  const byConnection = new Map<number, CorpusFrame[]>();
  for (const frame of corpus.frames) {
    if (frame.listener !== 'sasl') continue;
    const list = byConnection.get(frame.connection) ?? [];
    list.push(frame);
    byConnection.set(frame.connection, list);
  }
  return [...byConnection.values()].map((frames) => frames.sort((a, b) => a.index - b.index).map(seed));
}
