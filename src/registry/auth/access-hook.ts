/**
 * The registry's access check, a fastify onRequest hook: authenticate the request's basic
 * credentials, then compare the user's role with the route's (route-roles.ts).
 *
 * - No credentials: 401, `WWW-Authenticate: Basic realm="…"`, body {"error_code":40101,…}.
 * - Bad credentials: the same 401, answered after `failureDelayMs` (it slows guessing).
 * - A role too low for the route: 403, body {"error_code":40301,…}.
 * Failures are logged with the user name and the reason, never the password.
 */
import type { FastifyInstance } from 'fastify';
import type { RegistryAuthenticator } from './authenticator.js';
import { requiredRole, roleAllows } from './route-roles.js';

export interface AccessControlOptions {
  readonly realm?: string;
  /** Pause before answering bad credentials. Default 100 ms. */
  readonly failureDelayMs?: number;
}

export const DEFAULT_REALM = 'tributary-registry';

export function installAccessControl(app: FastifyInstance, authenticator: RegistryAuthenticator, options: AccessControlOptions = {}): void {
  const challenge = `Basic realm="${(options.realm ?? DEFAULT_REALM).replace(/["\\]/g, '')}", charset="UTF-8"`;
  const delayMs = options.failureDelayMs ?? 100;
  app.addHook('onRequest', async (request, reply) => {
    const authentication = await authenticator.authenticate(request.headers.authorization);
    if (authentication.outcome !== 'authenticated') {
      if (authentication.outcome === 'failed') {
        request.log.warn({ user: claimedUser(request.headers.authorization), reason: authentication.reason, remote: request.ip }, 'registry authentication failed');
        await new Promise((resolve) => setTimeout(resolve, delayMs));
      }
      return reply
        .code(401)
        .header('www-authenticate', challenge)
        .send({ error_code: 40101, message: 'Unauthorized: send HTTP basic credentials of a user in the registry users file' });
    }
    const { user } = authentication;
    const needed = requiredRole(request.method, request.routeOptions.url);
    if (!roleAllows(user.role, needed)) {
      request.log.warn({ user: user.name, role: user.role, needed, method: request.method, url: request.url }, 'registry request forbidden');
      return reply
        .code(403)
        .send({ error_code: 40301, message: `Forbidden: user '${user.name}' (${user.role}) may not ${request.method} ${request.url.split('?')[0] ?? ''}; it needs the ${needed} role` });
    }
    return undefined;
  });
}

/** The user name of a basic header, for logs (the password part is dropped). */
function claimedUser(header: string | undefined): string | undefined {
  const encoded = /^Basic\s+(\S+)/i.exec(header?.trim() ?? '')?.[1];
  if (encoded === undefined) return undefined;
  const decoded = Buffer.from(encoded, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  return colon < 0 ? undefined : decoded.slice(0, Math.min(colon, 100));
}
