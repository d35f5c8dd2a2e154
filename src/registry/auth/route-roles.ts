/**
 * Which role each REST route needs. Roles are ordered: admin ⊇ writer ⊇ read-only.
 *
 * - read-only: every GET, and the lookup `POST /subjects/{s}` (it only reads: a producer that
 *   does not register schemas itself, Confluent's `auto.register.schemas=false`, calls it).
 * - writer: registering (`POST /subjects/{s}/versions`) and compatibility tests.
 * - admin: everything else, i.e. changing compatibility or mode (`PUT|DELETE /config…`,
 *   `PUT /mode…`) and deleting subjects or versions.
 *
 * A method or route not listed needs admin, so a route added later is closed until it is listed.
 */
import type { RegistryRole } from './users-file.js';

const RANK: Readonly<Record<RegistryRole, number>> = { 'read-only': 0, writer: 1, admin: 2 };

const READ_POSTS = new Set(['/', '/subjects/:subject']);
const WRITER_POSTS = new Set([
  '/subjects/:subject/versions',
  '/compatibility/subjects/:subject/versions',
  '/compatibility/subjects/:subject/versions/:version',
]);

/** The least role for `method` on the route `pattern` (fastify's route URL; undefined: no route). */
export function requiredRole(method: string, pattern: string | undefined): RegistryRole {
  const verb = method.toUpperCase();
  if (verb === 'GET' || verb === 'HEAD') return 'read-only';
  // No such route: any user may learn that (the answer is a 404).
  if (pattern === undefined) return 'read-only';
  if (verb === 'POST' && READ_POSTS.has(pattern)) return 'read-only';
  if (verb === 'POST' && WRITER_POSTS.has(pattern)) return 'writer';
  return 'admin';
}

export function roleAllows(role: RegistryRole, needed: RegistryRole): boolean {
  return RANK[role] >= RANK[needed];
}
