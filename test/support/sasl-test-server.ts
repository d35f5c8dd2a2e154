/**
 * A minimal Kafka-protocol server for testing our client's TLS and SASL alone, without a broker:
 * it answers ApiVersions, SaslHandshake v0–1 and SaslAuthenticate v0–1 (PLAIN and SCRAM, with the
 * protocol layer's server exchange) for one user, refuses anything else before authentication by
 * closing (as Kafka does), and records the API keys it was sent, so a test can see that nothing
 * but the SASL requests came before authentication. Over TLS (node:tls) or plain TCP.
 */
import { createServer as createTcpServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { createServer as createTlsServer, type TLSSocket } from 'node:tls';
import { readFileSync } from 'node:fs';
import { FrameDecoder } from '../../src/protocol/framing.js';
import { ApiVersionsApi } from '../../src/protocol/apis/api-versions.js';
import { SaslAuthenticateApi } from '../../src/protocol/apis/sasl-authenticate.js';
import { SaslHandshakeApi } from '../../src/protocol/apis/sasl-handshake.js';
import { decodeRequestHeader, encodeResponseHeader } from '../../src/protocol/headers.js';
import { decodePlainToken } from '../../src/protocol/sasl/plain.js';
import { ScramServerExchange, scramCredential, type ScramMechanism } from '../../src/protocol/sasl/scram.js';
import { decodeRequestBody, encodeResponseBody, type ApiSchema } from '../../src/protocol/schema.js';
import { WireReader, WireWriter } from '../../src/protocol/wire.js';

export interface SaslTestServerOptions {
  /** TLS with this PEM key + certificate file; absent: plain TCP. */
  readonly keystore?: string;
  /** Require a client certificate signed by this CA (PEM). */
  readonly clientCa?: string;
  /** Mechanisms enabled; absent: no SASL at all (ApiVersions does not list the SASL APIs). */
  readonly mechanisms?: readonly string[];
  readonly username?: string;
  readonly password?: string;
  readonly host?: string;
}

export interface SaslTestServer {
  readonly host: string;
  readonly port: number;
  /** API keys received, per connection, in order; `auth` marks where authentication succeeded. */
  readonly conversations: (number | 'auth')[][];
  /** Subjects of the client certificates presented. */
  readonly peerSubjects: string[];
  close(): Promise<void>;
}

const API_VERSIONS = 18;
const SASL_HANDSHAKE = 17;
const SASL_AUTHENTICATE = 36;

export async function startSaslTestServer(options: SaslTestServerOptions): Promise<SaslTestServer> {
  const conversations: (number | 'auth')[][] = [];
  const peerSubjects: string[] = [];
  const sockets = new Set<Socket>();
  const onSocket = (socket: Socket): void => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
    if ('getPeerCertificate' in socket) {
      const subject = (socket as TLSSocket).getPeerCertificate().subject as { CN?: string } | undefined;
      if (subject?.CN !== undefined) peerSubjects.push(subject.CN);
    }
    const log: (number | 'auth')[] = [];
    conversations.push(log);
    serve(socket, options, log);
  };
  let server: Server;
  if (options.keystore !== undefined) {
    const pem = readFileSync(options.keystore);
    server = createTlsServer(
      {
        key: pem,
        cert: pem,
        minVersion: 'TLSv1.2',
        ...(options.clientCa === undefined ? {} : { ca: readFileSync(options.clientCa), requestCert: true, rejectUnauthorized: true }),
      },
      onSocket,
    );
    server.on('tlsClientError', () => undefined);
  } else {
    server = createTcpServer(onSocket);
  }
  const host = options.host ?? '127.0.0.1';
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  return {
    host,
    port: (server.address() as AddressInfo).port,
    conversations,
    peerSubjects,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

function serve(socket: Socket, options: SaslTestServerOptions, log: (number | 'auth')[]): void {
  const decoder = new FrameDecoder(1024 * 1024);
  const sasl = options.mechanisms !== undefined;
  let authenticated = !sasl;
  let mechanism: string | undefined;
  let scram: ScramServerExchange | undefined;
  socket.on('data', (chunk: Buffer) => {
    const frames = decoder.push(chunk);
    if (decoder.failure !== undefined) socket.destroy(); // e.g. a TLS ClientHello on a plain port
    for (const frame of frames) {
      const reader = new WireReader(frame);
      const header = decodeRequestHeader(reader);
      log.push(header.apiKey);
      const answer = <Req, Res>(api: ApiSchema<Req, Res>, response: Res): void => {
        const writer = new WireWriter();
        writer.int32(0);
        encodeResponseHeader(writer, header.correlationId, 0);
        encodeResponseBody(api, header.apiVersion, response, writer);
        const bytes = writer.toBuffer();
        bytes.writeInt32BE(bytes.length - 4, 0);
        socket.write(bytes);
      };
      if (header.apiKey === API_VERSIONS) {
        const keys = [{ apiKey: API_VERSIONS, minVersion: 0, maxVersion: 2 }, ...(sasl ? [{ apiKey: SASL_HANDSHAKE, minVersion: 0, maxVersion: 1 }, { apiKey: SASL_AUTHENTICATE, minVersion: 0, maxVersion: 1 }] : [])];
        answer(ApiVersionsApi, { errorCode: 0, apiKeys: keys, throttleTimeMs: 0 });
      } else if (header.apiKey === SASL_HANDSHAKE && sasl && !authenticated) {
        const request = decodeRequestBody(SaslHandshakeApi, header.apiVersion, reader);
        const enabled = options.mechanisms ?? [];
        mechanism = enabled.includes(request.mechanism) ? request.mechanism : undefined;
        answer(SaslHandshakeApi, { errorCode: mechanism === undefined ? 33 : 0, mechanisms: enabled });
        if (mechanism?.startsWith('SCRAM-') === true) scram = new ScramServerExchange(mechanism as ScramMechanism);
      } else if (header.apiKey === SASL_AUTHENTICATE && mechanism !== undefined && !authenticated) {
        const { authBytes } = decodeRequestBody(SaslAuthenticateApi, header.apiVersion, reader);
        const refuse = (message: string): void => {
          answer(SaslAuthenticateApi, { errorCode: 58, errorMessage: message, authBytes: Buffer.alloc(0), sessionLifetimeMs: 0n });
          socket.end();
        };
        try {
          if (scram === undefined) {
            const token = decodePlainToken(authBytes);
            if (token.username !== options.username || token.password !== options.password) {
              refuse(`Authentication failed: Invalid username or password`);
              continue;
            }
            authenticated = true;
            log.push('auth');
            answer(SaslAuthenticateApi, { errorCode: 0, errorMessage: null, authBytes: Buffer.alloc(0), sessionLifetimeMs: 0n });
          } else if (scram.username === undefined) {
            const { username } = scram.receiveClientFirst(authBytes);
            const credential = username === options.username ? scramCredential(scram.mechanism, options.password ?? '') : undefined;
            answer(SaslAuthenticateApi, { errorCode: 0, errorMessage: null, authBytes: scram.serverFirst(credential), sessionLifetimeMs: 0n });
          } else {
            const serverFinal = scram.receiveClientFinal(authBytes);
            authenticated = true;
            log.push('auth');
            answer(SaslAuthenticateApi, { errorCode: 0, errorMessage: null, authBytes: serverFinal, sessionLifetimeMs: 0n });
          }
        } catch (error) {
          refuse((error as Error).message);
        }
      } else if (!authenticated) {
        socket.destroy(); // Kafka: "Unexpected Kafka request … during SASL handshake"
      } else {
        socket.destroy(); // this server serves nothing else
      }
    }
  });
}
