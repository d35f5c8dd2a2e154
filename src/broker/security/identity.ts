/**
 * Who is asking, as a request handler sees it: Kafka's principal string and the listener the
 * connection came in on. A connection on a PLAINTEXT listener, or one that has not authenticated
 * yet, is `User:ANONYMOUS` (Kafka's name for it).
 */
export type SecurityProtocol = 'PLAINTEXT' | 'SSL' | 'SASL_PLAINTEXT' | 'SASL_SSL';

export interface ConnectionIdentity {
  /** `User:<name>` (SASL), `User:<certificate subject>` (SSL with client certificates), or `User:ANONYMOUS`. */
  readonly principal: string;
  readonly listenerName: string;
  readonly securityProtocol: SecurityProtocol;
  /** The client's IP address, without the port (ACLs match on it). */
  readonly clientHost: string;
}

export const ANONYMOUS_PRINCIPAL = 'User:ANONYMOUS';

export function anonymousIdentity(remoteAddress: string, listenerName = 'PLAINTEXT', securityProtocol: SecurityProtocol = 'PLAINTEXT'): ConnectionIdentity {
  return { principal: ANONYMOUS_PRINCIPAL, listenerName, securityProtocol, clientHost: hostOf(remoteAddress) };
}

/** `1.2.3.4:5678` → `1.2.3.4`; `::1:5678` → `::1`. */
export function hostOf(remoteAddress: string): string {
  return remoteAddress.replace(/:[^:]*$/, '');
}
