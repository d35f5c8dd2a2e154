/**
 * The fuzz storm of the SASL listeners: conversations real clients had with a SASL_PLAINTEXT or
 * SASL_SSL listener (the captured corpus, fuzz-captured.ts: ApiVersions, SaslHandshake, the
 * SaslAuthenticate round trips of SCRAM-SHA-512/256 and PLAIN, then Metadata, Produce, …)
 * replayed one frame at a time over a fresh connection, each frame mutated with some probability
 * (the generator's mutations), with now and then a frame of any other class of the generator
 * between them.
 *
 * What the broker must do, frame by frame, checked as it answers:
 *   - a frame the protocol layer cannot decode (analyzeFrame: close) is never answered;
 *   - an answer is a well-formed response of the request's API and version, with its correlation id;
 *   - before a SaslAuthenticate has been answered with error 0, nothing but ApiVersions,
 *     SaslHandshake and SaslAuthenticate is answered;
 *   - SaslAuthenticate succeeds only for what can succeed in a replay: a PLAIN token carrying the
 *     user's true password after a PLAIN handshake. A SCRAM exchange never can (the server's nonce
 *     is new on every connection, so a replayed proof is wrong).
 * A handshake at v0 answered with error 0 switches the connection to raw tokens (not Kafka
 * frames); the storm ends such a conversation there (sasl-fuzz.test.ts fuzzes raw tokens).
 */
import { readFileSync } from 'node:fs';
import { createConnection, type Socket } from 'node:net';
import { connect as connectTls } from 'node:tls';
import { ApiVersionsApi, SaslAuthenticateApi, SaslHandshakeApi, type SaslAuthenticateRequest, type SaslAuthenticateResponse, type SaslHandshakeRequest, type SaslHandshakeResponse } from '../../src/protocol/apis/index.js';
import { decodeResponseHeader, responseHeaderVersion } from '../../src/protocol/headers.js';
import { decodeResponseBody } from '../../src/protocol/schema.js';
import { WireReader } from '../../src/protocol/wire.js';
import { LOOPBACK } from '../services/network.js';
import { type SeedFrame } from './fuzz-captured.js';
import { FrameFactory, Prng, analyzeFrame, framed, type BatchPrediction, type FrameAnalysis } from './fuzz-frames.js';
import { SCRATCH_TOPICS, STORM_TOPICS, hex, type Sent, type Storm } from './fuzz-storm.js';

/** A frame with no answer and no close for this long ends the conversation (an acks=0 Produce, a long poll, a lying length). */
const QUIET_MS = 1_500;
const SASL_APIS: ReadonlySet<number> = new Set([ApiVersionsApi.apiKey, SaslHandshakeApi.apiKey, SaslAuthenticateApi.apiKey]);

export interface SaslStormOptions {
  readonly seed: number;
  /** Frames to send in all. */
  readonly target: number;
  readonly conversations: readonly SeedFrame[][];
  readonly prediction: BatchPrediction;
  /** The user's password: a PLAIN token with it may succeed. */
  readonly user: string;
  readonly password: string;
  readonly saslPlaintextPort: number;
  readonly saslSslPort: number;
  /** The CA that signed the broker's certificate (for SASL_SSL). */
  readonly ca: string;
  /** Conversations at once. */
  readonly concurrency?: number;
  /**
   * The plaintext storm on the same broker, whose ledger and checks a Produce after a login goes
   * through: what it may append is acceptable, what is acknowledged must be stored.
   */
  readonly storm: Storm;
}

export interface SaslStormResult {
  frames: number;
  mutatedFrames: number;
  connections: number;
  tlsConnections: number;
  answered: number;
  closedByBroker: number;
  /** Conversations whose SaslAuthenticate succeeded (PLAIN with the true password). */
  authenticated: number;
  /** Frames answered after a successful login. */
  answeredAfterLogin: number;
  quiet: number;
  v0Handshakes: number;
  readonly anomalies: string[];
}

export class SaslStorm {
  private readonly rng: Prng;
  private readonly factory: FrameFactory;
  private sent = 0;
  private stopped = false;
  readonly result: SaslStormResult = { frames: 0, mutatedFrames: 0, connections: 0, tlsConnections: 0, answered: 0, closedByBroker: 0, authenticated: 0, answeredAfterLogin: 0, quiet: 0, v0Handshakes: 0, anomalies: [] };

  constructor(private readonly options: SaslStormOptions) {
    this.rng = new Prng(options.seed);
    this.factory = new FrameFactory(new Prng(options.seed ^ 0x5a5a5a5a), { topics: STORM_TOPICS, scratchTopics: SCRATCH_TOPICS });
  }

  stop(): void {
    this.stopped = true;
  }

  async run(): Promise<SaslStormResult> {
    await Promise.all(
      Array.from({ length: this.options.concurrency ?? 8 }, async () => {
        while (!this.stopped && this.sent < this.options.target) await this.conversation();
      }),
    );
    return this.result;
  }

  private anomaly(what: string): void {
    if (this.result.anomalies.length < 200) this.result.anomalies.push(what);
  }

  /** The frames of one conversation: a captured one, mutated here and there, with strangers mixed in. */
  private script(): Buffer[] {
    const rng = this.rng;
    const captured = rng.pick(this.options.conversations);
    const mutationRate = rng.pick([0, 0.1, 0.3, 0.6]);
    const frames: Buffer[] = [];
    for (const seed of captured) {
      if (rng.chance(0.05)) frames.push(this.factory.next().bytes);
      let body = seed.body;
      if (rng.chance(mutationRate)) {
        for (let i = rng.between(1, 3); i > 0; i -= 1) body = this.factory.mutate(body).bytes;
        this.result.mutatedFrames += 1;
      }
      frames.push(framed(body));
    }
    return frames;
  }

  private async conversation(): Promise<void> {
    const tls = this.rng.chance(0.5);
    const frames = this.script();
    this.result.connections += 1;
    if (tls) this.result.tlsConnections += 1;
    const link = await this.open(tls);
    if (link === undefined) return;
    let mechanism: string | undefined;
    let authenticated = false;
    try {
      for (const frame of frames) {
        if (this.stopped || this.sent >= this.options.target) break;
        this.sent += 1;
        this.result.frames += 1;
        // Frames with a lying size prefix (a stranger from the generator) are the limits suite's and the
        // plaintext storm's business: here a frame's prefix is honest, else the conversation stops.
        if (frame.length < 4 || frame.readInt32BE(0) !== frame.length - 4) {
          link.socket.write(frame);
          break;
        }
        const analysis = analyzeFrame(frame, this.options.prediction);
        // After a login a Produce may append: the plaintext storm's ledger learns what it may store.
        const produce: Sent | undefined = authenticated && analysis.kind !== 'close' && analysis.batches.length > 0 ? { frame: { category: 'captured', kind: 'sasl-produce', bytes: frame, handling: 'analyze', expectedError: undefined }, analysis, giveUpAt: undefined } : undefined;
        if (produce !== undefined) this.options.storm.wrote(produce);
        link.socket.write(frame);
        const answer = await link.next(QUIET_MS);
        if (answer === 'closed') {
          this.result.closedByBroker += 1;
          return;
        }
        if (answer === 'quiet') {
          this.result.quiet += 1;
          return;
        }
        this.result.answered += 1;
        if (authenticated) this.result.answeredAfterLogin += 1;
        if (produce !== undefined) this.options.storm.check(produce, answer);
        const verdict = this.judge(analysis, answer, frame, { mechanism, authenticated });
        if (verdict === 'stop') return;
        if (verdict.mechanism !== undefined) mechanism = verdict.mechanism;
        if (verdict.authenticated && !authenticated) {
          authenticated = true;
          this.result.authenticated += 1;
        }
      }
    } finally {
      link.socket.destroy();
    }
  }

  /** Checks one answer; what the conversation learnt from it, or 'stop'. */
  private judge(analysis: FrameAnalysis, response: Buffer, frame: Buffer, state: { mechanism: string | undefined; authenticated: boolean }): 'stop' | { mechanism?: string; authenticated: boolean } {
    if (analysis.kind === 'close') {
      this.anomaly(`answered a frame it must close on (${analysis.reason}): ${hex(frame, 200)} → ${hex(response, 200)}`);
      return 'stop';
    }
    const { api, header } = analysis;
    if (!state.authenticated && !SASL_APIS.has(api.apiKey)) {
      this.anomaly(`answered ${api.name} v${header.apiVersion} before authentication: ${hex(frame, 200)} → ${hex(response, 200)}`);
      return 'stop';
    }
    let body: unknown;
    try {
      const reader = new WireReader(response, 4);
      const correlationId = decodeResponseHeader(reader, analysis.fallback ? 0 : responseHeaderVersion(api.apiKey, analysis.responseVersion));
      body = decodeResponseBody(api, analysis.responseVersion, reader);
      if (reader.remaining() !== 0) throw new Error(`${reader.remaining()} trailing bytes`);
      if (correlationId !== header.correlationId) throw new Error(`correlation id ${correlationId}, expected ${header.correlationId}`);
    } catch (error) {
      this.anomaly(`response to ${api.name} v${analysis.responseVersion} does not decode: ${(error as Error).message}: ${hex(response, 200)}`);
      return 'stop';
    }
    if (api.apiKey === SaslHandshakeApi.apiKey) {
      const answer = body as SaslHandshakeResponse;
      if (answer.errorCode !== 0) return { authenticated: state.authenticated };
      if (header.apiVersion === 0) {
        this.result.v0Handshakes += 1;
        return 'stop';
      }
      return { mechanism: (analysis.request as SaslHandshakeRequest).mechanism, authenticated: state.authenticated };
    }
    if (api.apiKey === SaslAuthenticateApi.apiKey) {
      const answer = body as SaslAuthenticateResponse;
      const token = (analysis.request as SaslAuthenticateRequest).authBytes;
      if (answer.errorCode !== 0) return { authenticated: state.authenticated };
      if (state.mechanism === 'PLAIN') {
        if (!this.truePlainToken(token)) this.anomaly(`PLAIN login accepted a token without the true password: ${hex(token, 200)}`);
        return { authenticated: true };
      }
      // SCRAM: the first round trip is answered with error 0 (the server-first message); a final
      // one never can be in a replay. The server-final message starts with v= (or e= on refusal).
      if (answer.authBytes.subarray(0, 2).toString('latin1') === 'v=') this.anomaly(`a replayed SCRAM proof was accepted: ${hex(token, 200)}`);
      return { authenticated: state.authenticated };
    }
    return { authenticated: state.authenticated };
  }

  /** authzid NUL user NUL password with the true user and password (authzid empty or the user). */
  private truePlainToken(token: Buffer): boolean {
    const parts = token.toString('utf8').split('\u0000');
    return parts.length === 3 && (parts[0] === '' || parts[0] === this.options.user) && parts[1] === this.options.user && parts[2] === this.options.password;
  }

  private open(tls: boolean): Promise<{ socket: Socket; next: (timeoutMs: number) => Promise<Buffer | 'closed' | 'quiet'> } | undefined> {
    return new Promise((resolve) => {
      const socket = tls
        ? connectTls({ host: LOOPBACK, port: this.options.saslSslPort, ca: readFileSync(this.options.ca), servername: 'localhost' })
        : createConnection({ host: LOOPBACK, port: this.options.saslPlaintextPort });
      let buffered = Buffer.alloc(0);
      const frames: Buffer[] = [];
      let closed = false;
      let wake: (() => void) | undefined;
      socket.on('data', (chunk: Buffer) => {
        buffered = Buffer.concat([buffered, chunk]);
        while (buffered.length >= 4 && buffered.length >= 4 + buffered.readInt32BE(0)) {
          const size = buffered.readInt32BE(0);
          frames.push(buffered.subarray(0, 4 + size));
          buffered = buffered.subarray(4 + size);
        }
        wake?.();
      });
      socket.on('close', () => {
        closed = true;
        wake?.();
      });
      socket.once('error', (error: Error) => {
        if (!opened) {
          this.anomaly(`could not connect to the ${tls ? 'SASL_SSL' : 'SASL_PLAINTEXT'} listener: ${error.message}`);
          resolve(undefined);
        }
      });
      let opened = false;
      socket.once(tls ? 'secureConnect' : 'connect', () => {
        opened = true;
        socket.setNoDelay(true);
        resolve({
          socket,
          next: (timeoutMs) =>
            new Promise((answer) => {
              const settle = (): void => {
                const frame = frames.shift();
                if (frame !== undefined) answer(frame);
                else if (closed) answer('closed');
                else return;
                clearTimeout(timer);
                wake = undefined;
              };
              const timer = setTimeout(() => {
                wake = undefined;
                answer('quiet');
              }, timeoutMs);
              wake = settle;
              settle();
            }),
        });
      });
    });
  }
}
