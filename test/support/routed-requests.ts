/**
 * Requests sent straight into a broker's RequestRouter as a chosen identity (a principal and a
 * client host), encoded and decoded by the protocol layer as on the wire: how the ACL tests act
 * as several users before a listener authenticates them. File-range parts of a Fetch answer are
 * read from their files, then released as the network layer would.
 */
import { readSync } from 'node:fs';
import type { RequestRouter } from '../../src/broker/router.js';
import type { ConnectionIdentity } from '../../src/broker/security/identity.js';
import type { FileRange } from '../../src/broker/response-writer.js';
import { decodeResponseHeader, encodeRequestHeader, responseHeaderVersion } from '../../src/protocol/headers.js';
import { decodeResponseBody, encodeRequestBody, type ApiSchema } from '../../src/protocol/schema.js';
import { isExternalPart, WireReader, WireWriter, type MessagePart } from '../../src/protocol/wire.js';

export function identityOf(principal: string, clientHost = '127.0.0.1'): ConnectionIdentity {
  return { principal, listenerName: 'PLAINTEXT', securityProtocol: 'PLAINTEXT', clientHost };
}

let nextConnectionId = 900_000;

export class RoutedClient {
  private correlation = 1;
  private readonly connectionId = nextConnectionId++;

  constructor(
    private readonly router: RequestRouter,
    readonly identity: ConnectionIdentity,
  ) {}

  async request<Req, Res>(api: ApiSchema<Req, Res>, version: number, request: Req): Promise<Res> {
    const correlationId = this.correlation++;
    const writer = new WireWriter();
    encodeRequestHeader(writer, { apiKey: api.apiKey, apiVersion: version, correlationId, clientId: 'routed' });
    encodeRequestBody(api, version, request, writer);
    const outcome = await this.router.route(writer.toBuffer(), this.connectionId, `${this.identity.clientHost}:40000`, () => {}, this.identity);
    if (outcome.kind !== 'respond') throw new Error(`${api.name} v${version} got no response: ${outcome.kind === 'close' ? outcome.reason : 'none'}`);
    let bytes: Buffer;
    try {
      bytes = Buffer.concat(outcome.parts.map(materialize));
    } finally {
      outcome.after?.();
    }
    const reader = new WireReader(bytes);
    expectCorrelation(decodeResponseHeader(reader, responseHeaderVersion(api.apiKey, version)), correlationId);
    return decodeResponseBody(api, version, reader);
  }
}

function materialize(part: MessagePart): Buffer {
  if (!isExternalPart(part)) return part;
  const range = part.source as FileRange;
  const bytes = Buffer.alloc(range.length);
  readSync(range.fd, bytes, 0, range.length, range.position);
  return bytes;
}

function expectCorrelation(got: number, wanted: number): void {
  if (got !== wanted) throw new Error(`response correlation id ${got}, expected ${wanted}`);
}
