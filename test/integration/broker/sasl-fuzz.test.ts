/**
 * A fuzzer of the SASL exchange (issue #21 acceptance): some 700 connections to the SASL_PLAINTEXT
 * and SASL_SSL listeners, each sending a pipelined burst of 3–12 frames drawn from a seeded
 * generator — random bodies, SaslHandshake with random or real mechanisms at versions 0–3,
 * SaslAuthenticate with random, truncated and mutated tokens (real SCRAM client-first messages cut
 * short or with flipped bytes, PLAIN tokens with wrong passwords), raw tokens after a v0
 * handshake, handshakes twice, SaslAuthenticate before the handshake, and Metadata / Produce /
 * CreateTopics requests at any point. Every burst ends with a Metadata request.
 *
 * Asserted: no request other than ApiVersions / SaslHandshake / SaslAuthenticate is ever answered
 * (every other request carries a correlation id from a reserved range, and no response frame
 * carries one); no topic appears; the broker logs no error; and afterwards a real client still
 * authenticates and is served.
 *
 * Then the short version of the chaos fuzz run's SASL storm (test/support/fuzz-sasl.ts): the
 * SCRAM and PLAIN conversations kcat, kafkajs and the Java tools had (the captured corpus),
 * replayed with mutations over SASL_PLAINTEXT and SASL_SSL, every answer checked.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiVersionsApi } from '../../../src/protocol/apis/api-versions.js';
import { CreateTopicsApi } from '../../../src/protocol/apis/create-topics.js';
import { MetadataApi } from '../../../src/protocol/apis/metadata.js';
import { ProduceApi } from '../../../src/protocol/apis/produce.js';
import { SaslAuthenticateApi } from '../../../src/protocol/apis/sasl-authenticate.js';
import { SaslHandshakeApi } from '../../../src/protocol/apis/sasl-handshake.js';
import { encodePlainToken } from '../../../src/protocol/sasl/plain.js';
import { ScramClientExchange } from '../../../src/protocol/sasl/scram.js';
import { Conversation, requestFrame } from '../../support/conversation.js';
import { METADATA_ALL, scramLogin } from '../../support/sasl-conversation.js';
import { startSecureBroker, type SecureBroker } from '../../support/secure-broker.js';
import { seededRandom } from '../../support/seeded-random.js';
import { loadBatchValidation, referenceValidation } from '../../support/batch-rules.js';
import { CAPTURE_PASSWORD, CAPTURE_USER, loadCapturedCorpus, saslConversations } from '../../support/fuzz-captured.js';
import { SaslStorm } from '../../support/fuzz-sasl.js';
import { MAX_BATCH_BYTES, Storm, StormLedger } from '../../support/fuzz-storm.js';

const USER = 'dave';
const PASSWORD = 'dave-password-3';
const CONNECTIONS = 700;
const CONCURRENCY = 25;
/** Correlation ids of requests that must never be answered: 0x7A7A0000 and up. */
const FORBIDDEN_BASE = 0x7a7a0000;

let secure: SecureBroker;

beforeAll(async () => {
  secure = await startSecureBroker({ users: { [USER]: PASSWORD, [CAPTURE_USER]: CAPTURE_PASSWORD } });
});
afterAll(async () => {
  await secure?.stop();
  expect(secure?.logLines.filter((line) => Number(line['level']) >= 50) ?? []).toEqual([]);
});


class Frames {
  private forbidden = 0;
  private correlation = 1;

  constructor(private readonly random: () => number) {}

  int(below: number): number {
    return Math.floor(this.random() * below);
  }

  bytes(length: number): Buffer {
    return Buffer.from(Array.from({ length }, () => this.int(256)));
  }

  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)] as T;
  }

  nextForbiddenId(): number {
    this.forbidden += 1;
    return FORBIDDEN_BASE + this.forbidden;
  }

  private id(): number {
    this.correlation += 1;
    return this.correlation;
  }

  /** A size-prefixed frame around `body`. */
  framed(body: Buffer): Buffer {
    const prefix = Buffer.alloc(4);
    prefix.writeInt32BE(body.length);
    return Buffer.concat([prefix, body]);
  }

  /** A request header (v1) for any key/version, then `body`. */
  raw(apiKey: number, version: number, body: Buffer, correlationId = this.id()): Buffer {
    const header = Buffer.alloc(10);
    header.writeInt16BE(apiKey, 0);
    header.writeInt16BE(version, 2);
    header.writeInt32BE(correlationId, 4);
    header.writeInt16BE(-1, 8);
    return this.framed(Buffer.concat([header, body]));
  }

  /** A length-prefixed BYTES field. */
  bytesField(value: Buffer): Buffer {
    const length = Buffer.alloc(4);
    length.writeInt32BE(value.length);
    return Buffer.concat([length, value]);
  }

  /** A length-prefixed STRING field. */
  stringField(value: string): Buffer {
    const text = Buffer.from(value, 'utf8');
    const length = Buffer.alloc(2);
    length.writeInt16BE(text.length);
    return Buffer.concat([length, text]);
  }

  forbiddenRequest(): Buffer {
    const id = this.nextForbiddenId();
    switch (this.int(3)) {
      case 0:
        return requestFrame(MetadataApi, this.int(2) + 1, id, METADATA_ALL);
      case 1:
        return requestFrame(ProduceApi, 3, id, { transactionalId: null, acks: 1, timeoutMs: 1000, topicData: [{ name: 'fuzzed', partitionData: [{ index: 0, records: this.bytes(70) }] }] });
      default:
        return this.raw(CreateTopicsApi.apiKey, 0, this.bytes(this.int(40)), id);
    }
  }

  token(): Buffer {
    const user = this.pick([USER, 'mallory', '', 'a=b,c', '\u0000', 'x'.repeat(300)]);
    switch (this.int(6)) {
      case 0:
        return this.bytes(this.int(300));
      case 1: {
        // A real client-first message, cut short or with flipped bytes.
        const first = new ScramClientExchange('SCRAM-SHA-512', user === '' ? 'u' : user, 'p').clientFirst();
        if (this.int(2) === 0) return first.subarray(0, this.int(first.length));
        const mutated = Buffer.from(first);
        for (let flips = 1 + this.int(3); flips > 0; flips -= 1) mutated[this.int(mutated.length)] = this.int(256);
        return mutated;
      }
      case 2:
        return user === '' || user.includes('\u0000') ? Buffer.from('\u0000\u0000') : encodePlainToken(user, `guess-${this.int(1000)}`);
      case 3:
        return Buffer.from(`c=biws,r=${this.bytes(12).toString('base64')},p=${this.bytes(64).toString('base64')}`);
      case 4:
        return Buffer.from(`n,,n=${user},r=${'r'.repeat(this.int(5000))}`);
      default:
        return Buffer.alloc(0);
    }
  }

  /** One frame of a burst. */
  next(): Buffer {
    switch (this.int(9)) {
      case 0:
        return this.framed(this.bytes(this.int(120)));
      case 1:
        return requestFrame(ApiVersionsApi, this.int(4), this.id(), {});
      case 2:
        return this.raw(SaslHandshakeApi.apiKey, this.int(4), this.stringField(this.pick(['SCRAM-SHA-512', 'SCRAM-SHA-256', 'PLAIN', 'GSSAPI', 'OAUTHBEARER', '', 'x'.repeat(200)])));
      case 3:
      case 4:
        return this.raw(SaslAuthenticateApi.apiKey, this.int(3), this.bytesField(this.token()));
      case 5: {
        // A real frame, truncated: its size prefix says what is there, its body stops early.
        const whole = requestFrame(SaslAuthenticateApi, 1, this.id(), { authBytes: this.token() });
        return this.framed(whole.subarray(4, 4 + this.int(whole.length - 4)));
      }
      case 6:
        // A raw token, as after a v0 handshake (or garbage anywhere else).
        return this.framed(this.token());
      case 7:
        return this.raw(SaslAuthenticateApi.apiKey, 1, this.bytes(this.int(8)));
      default:
        return this.forbiddenRequest();
    }
  }
}

/** Response frames whose correlation id is in the forbidden range. */
function forbiddenAnswers(frames: readonly Buffer[]): number[] {
  return frames.filter((frame) => frame.length >= 8).map((frame) => frame.readInt32BE(4)).filter((id) => id > FORBIDDEN_BASE && id < FORBIDDEN_BASE + 0x10000);
}

const port = (address: string): number => Number(address.slice(address.lastIndexOf(':') + 1));

async function burst(frames: Frames, tls: boolean): Promise<{ sent: number; answers: Buffer[] }> {
  const conversation = tls
    ? await Conversation.openTls(port(secure.saslSsl), { ca: readFileSync(secure.certificates.ca), servername: 'localhost' })
    : await Conversation.open(port(secure.saslPlaintext));
  const count = 3 + frames.int(10);
  const sent = Array.from({ length: count }, () => frames.next());
  // Handshake v1 first now and then, so more bursts get past it into the token paths.
  if (frames.int(3) === 0) sent.unshift(frames.raw(SaslHandshakeApi.apiKey, frames.int(2), frames.stringField(frames.pick(['SCRAM-SHA-512', 'PLAIN']))));
  sent.push(frames.forbiddenRequest());
  conversation.send(Buffer.concat(sent));
  // Every burst ends unauthenticated with a forbidden request, so the broker closes it; a burst
  // whose truncated frame left the framing waiting for bytes is given up on after a while.
  await conversation.closedWithin(3_000);
  const answers: Buffer[] = [];
  for (;;) {
    try {
      answers.push(await conversation.response(1));
    } catch {
      break;
    }
  }
  conversation.close();
  return { sent: sent.length, answers };
}

describe('SASL fuzzer', () => {
  it('never crashes the broker nor lets a request through before authentication', async () => {
    const frames = new Frames(seededRandom(0x5a51));
    let sent = 0;
    let answered = 0;
    const forbidden: number[] = [];
    let next = 0;
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (next < CONNECTIONS) {
          next += 1;
          const result = await burst(frames, next % 5 === 0);
          sent += result.sent;
          answered += result.answers.length;
          forbidden.push(...forbiddenAnswers(result.answers));
        }
      }),
    );
    expect(forbidden).toEqual([]);
    expect(sent).toBeGreaterThan(3000);
    // Some bursts were answered (ApiVersions, handshakes, failed exchanges): the fuzzer reached the authenticator.
    expect(answered).toBeGreaterThan(100);
    expect(secure.broker.logManager.allLogs().map((log) => log.topic)).toEqual([]);

    // Still serving: a real client authenticates and is answered.
    const conversation = await Conversation.open(port(secure.saslPlaintext));
    try {
      expect((await scramLogin(conversation, 'SCRAM-SHA-512', USER, PASSWORD)).errorCode).toBe(0);
      expect((await conversation.request(MetadataApi, 1, METADATA_ALL)).brokers).toHaveLength(1);
    } finally {
      conversation.close();
    }
  });

  it('answers mutated replays of captured SCRAM and PLAIN conversations correctly, and lets in only the true PLAIN password', async () => {
    const { validation } = await loadBatchValidation();
    const prediction = { validation, rules: { maxBatchBytes: MAX_BATCH_BYTES, timestampType: 'CreateTime' as const, timestampBeforeMaxMs: Infinity, timestampAfterMaxMs: 3_600_000 }, reference: referenceValidation };
    const storm = new Storm({ seed: 1, target: 0, prediction }, new StormLedger());
    const sasl = new SaslStorm({
      seed: 0x5a52,
      target: 600,
      conversations: saslConversations(loadCapturedCorpus()),
      prediction,
      user: CAPTURE_USER,
      password: CAPTURE_PASSWORD,
      saslPlaintextPort: port(secure.saslPlaintext),
      saslSslPort: port(secure.saslSsl),
      ca: secure.certificates.ca,
      storm,
    });
    const result = await sasl.run();
    process.stdout.write(`[sasl-fuzz] captured conversations: ${JSON.stringify({ ...result, anomalies: result.anomalies.length })}\n`);
    expect(result.anomalies, result.anomalies.slice(0, 5).join('\n')).toEqual([]);
    expect(storm.anomalies).toEqual([]);
    expect(result.frames).toBe(600);
    // The replays reached past the login: PLAIN with the true password got in over SASL_SSL.
    expect(result.authenticated).toBeGreaterThan(0);
    expect(result.answeredAfterLogin).toBeGreaterThan(0);
  });
});
