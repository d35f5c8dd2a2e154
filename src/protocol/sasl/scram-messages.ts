/**
 * The four SCRAM messages (RFC 5802 §7, as Kafka's ScramMessages reads them), parsed and checked:
 *
 *   client-first  := gs2-header client-first-bare
 *   gs2-header    := "n,," | "y,,"                 (no channel binding, no authorization id)
 *   client-first-bare := "n=" saslname ",r=" c-nonce ["," extension]*
 *   server-first  := "r=" c-nonce s-nonce ",s=" base64(salt) ",i=" iterations ["," extension]*
 *   client-final  := "c=" base64(gs2-header) ",r=" nonce ["," extension]* ",p=" base64(ClientProof)
 *   server-final  := "v=" base64(ServerSignature) | "e=" server-error-value
 *
 *   saslname      := 1*(value-safe-char | "=2C" | "=3D")     ("," and "=" escaped)
 *   nonce         := 1*printable, printable = %x21-2B / %x2D-7E (no ",")
 *   extension     := key "=" value                            (Kafka: tokenauth=true, …)
 *
 * An "m=" attribute (reserved, mandatory extension) must fail the exchange (RFC 5802 §5.1). Every
 * message is bounded by MAX_SCRAM_MESSAGE_BYTES and must be valid UTF-8; base64 must be canonical.
 */
import { authenticationFailed, decodeUtf8 } from './sasl-error.js';

/** Far above any real SCRAM message (a long username and a SHA-512 proof fit in a few hundred bytes). */
export const MAX_SCRAM_MESSAGE_BYTES = 4096;

export interface Attribute {
  readonly name: string;
  readonly value: string;
}

export interface ClientFirst {
  /** "n,," or "y,,": what `c=` of client-final must carry, base64-encoded. */
  readonly gs2Header: string;
  readonly bare: string;
  readonly username: string;
  readonly nonce: string;
  readonly extensions: ReadonlyMap<string, string>;
}

export interface ServerFirst {
  readonly nonce: string;
  readonly salt: Buffer;
  readonly iterations: number;
}

export interface ClientFinal {
  readonly channelBinding: string;
  readonly nonce: string;
  readonly proof: Buffer;
  /** client-final-without-proof: the part that enters the AuthMessage. */
  readonly withoutProof: string;
}

export type ServerFinal = { readonly verifier: Buffer } | { readonly error: string };

/** Escapes a username for `n=`: "=" first, so the "=" of "=2C" is not escaped again. */
export function escapeUsername(username: string): string {
  return username.replaceAll('=', '=3D').replaceAll(',', '=2C');
}

export function unescapeUsername(saslname: string): string {
  if (/=(?!2C|3D)/.test(saslname)) throw authenticationFailed('the SCRAM username has an "=" that is not "=2C" or "=3D"');
  return saslname.replaceAll('=2C', ',').replaceAll('=3D', '=');
}

/** Whether `text` holds a C0 control character or DEL. */
export function hasControlCharacter(text: string): boolean {
  for (let i = 0; i < text.length; i += 1) {
    const code = text.charCodeAt(i);
    if (code < 0x20 || code === 0x7f) return true;
  }
  return false;
}

const NONCE = /^[\x21-\x2b\x2d-\x7e]+$/;
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

export function decodeBase64(text: string, what: string): Buffer {
  if (!BASE64.test(text)) throw authenticationFailed(`${what} is not base64`);
  return Buffer.from(text, 'base64');
}

export function messageText(message: Buffer, what: string): string {
  if (message.length > MAX_SCRAM_MESSAGE_BYTES) throw authenticationFailed(`the SCRAM ${what} is longer than ${MAX_SCRAM_MESSAGE_BYTES} bytes`);
  return decodeUtf8(message, `the SCRAM ${what}`);
}

/** `a=1,b=2` → attributes in order; each must be `name=value` with a letter name. */
function attributes(text: string, what: string): Attribute[] {
  return text.split(',').map((part) => {
    const at = part.indexOf('=');
    const name = at < 0 ? '' : part.slice(0, at);
    if (!/^[A-Za-z][A-Za-z0-9_-]*$/.test(name)) throw authenticationFailed(`the SCRAM ${what} is malformed`);
    if (name === 'm') throw authenticationFailed(`the SCRAM ${what} has a mandatory extension (m=), which is not supported`);
    return { name, value: part.slice(at + 1) };
  });
}

function required(attribute: Attribute | undefined, name: string, what: string): string {
  if (attribute?.name !== name) throw authenticationFailed(`the SCRAM ${what} is malformed: ${name}= expected`);
  return attribute.value;
}

function nonce(value: string, what: string): string {
  if (!NONCE.test(value)) throw authenticationFailed(`the SCRAM ${what} has an invalid nonce`);
  return value;
}

export function parseClientFirst(message: Buffer): ClientFirst {
  const text = messageText(message, 'client-first message');
  const gs2Header = text.slice(0, 3);
  if (gs2Header !== 'n,,' && gs2Header !== 'y,,') {
    if (text.startsWith('p=')) throw authenticationFailed('SCRAM channel binding is not supported');
    if (/^[ny],a=/.test(text)) throw authenticationFailed('a SCRAM authorization id is not supported');
    throw authenticationFailed('the SCRAM client-first message must start with n,,');
  }
  const bare = text.slice(3);
  const [user, clientNonce, ...rest] = attributes(bare, 'client-first message');
  const saslname = required(user, 'n', 'client-first message');
  const username = unescapeUsername(saslname);
  // Control characters would end up in principals and logs; no real user name has them.
  if (username === '' || hasControlCharacter(username)) throw authenticationFailed('the SCRAM username is empty or has control characters');
  const extensions = new Map(rest.map(({ name, value }) => [name, value] as const));
  return { gs2Header, bare, username, nonce: nonce(required(clientNonce, 'r', 'client-first message'), 'client-first message'), extensions };
}

export function parseServerFirst(message: Buffer): ServerFirst {
  const [combined, salt, iterations] = attributes(messageText(message, 'server-first message'), 'server-first message');
  const nonceValue = nonce(required(combined, 'r', 'server-first message'), 'server-first message');
  const saltBytes = decodeBase64(required(salt, 's', 'server-first message'), 'the SCRAM salt');
  const count = required(iterations, 'i', 'server-first message');
  if (saltBytes.length === 0 || !/^[1-9][0-9]{0,8}$/.test(count)) throw authenticationFailed('the SCRAM server-first message has no salt or a bad iteration count');
  return { nonce: nonceValue, salt: saltBytes, iterations: Number(count) };
}

export function parseClientFinal(message: Buffer): ClientFinal {
  const text = messageText(message, 'client-final message');
  const at = text.lastIndexOf(',p=');
  if (at < 0) throw authenticationFailed('the SCRAM client-final message has no proof');
  const withoutProof = text.slice(0, at);
  const [binding, combined] = attributes(withoutProof, 'client-final message');
  const channelBinding = required(binding, 'c', 'client-final message');
  const nonceValue = nonce(required(combined, 'r', 'client-final message'), 'client-final message');
  const proof = decodeBase64(text.slice(at + 3), 'the SCRAM client proof');
  return { channelBinding, nonce: nonceValue, proof, withoutProof };
}

export function parseServerFinal(message: Buffer): ServerFinal {
  const [first] = attributes(messageText(message, 'server-final message'), 'server-final message');
  if (first?.name === 'e') return { error: first.value };
  return { verifier: decodeBase64(required(first, 'v', 'server-final message'), 'the SCRAM server signature') };
}
