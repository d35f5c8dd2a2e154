/**
 * Confluent error bodies for the failures fastify answers before any route or hook runs: a path
 * that does not URL-decode (`/subjects/%ff`), a path parameter over the length limit, and a
 * request Node's HTTP parser refuses (garbage, conflicting Content-Length, a NUL in the path,
 * headers too large). Fastify's defaults answer these with its own `{"error","statusCode"}`
 * shape, which Confluent clients cannot read; every answer of the registry is
 * `{"error_code","message"}`.
 */
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { errorBody } from './http.js';

const DEFAULT_RESPONSE_TYPE = 'application/vnd.schemaregistry.v1+json';

function statusOf(error: unknown, fallback: number): number {
  const status = typeof error === 'object' && error !== null && 'statusCode' in error ? error.statusCode : undefined;
  return typeof status === 'number' && status >= 400 && status < 600 ? status : fallback;
}

/** fastify's `frameworkErrors`: the request never reached the router. */
export function answerFrameworkError(error: Error, _request: FastifyRequest, reply: FastifyReply): void {
  const status = statusOf(error, 400);
  void reply
    .code(status)
    .type(DEFAULT_RESPONSE_TYPE)
    .send(errorBody(status, `HTTP ${status} ${STATUS_CODES[status] ?? ''}: ${error.message}; percent-encode the path as UTF-8`));
}

/** fastify's `clientErrorHandler`: the bytes were not an HTTP request this server can parse. */
export function answerClientError(error: Error & { code?: string }, socket: Socket): void {
  // A reset connection has nobody to answer.
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const status = error.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : error.code === 'HPE_HEADER_OVERFLOW' ? 431 : 400;
  const reason = status === 408 ? 'the request took too long to arrive' : status === 431 ? 'the request headers are too large' : `the request is not valid HTTP/1.1 (${error.code ?? error.message})`;
  const body = JSON.stringify(errorBody(status, `HTTP ${status} ${STATUS_CODES[status] ?? ''}: ${reason}`));
  if (socket.writable) {
    socket.write(`HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nContent-Type: ${DEFAULT_RESPONSE_TYPE}\r\nConnection: close\r\n\r\n${body}`);
  }
  socket.destroy();
}
