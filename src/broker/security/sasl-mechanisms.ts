/**
 * The server side of each SASL mechanism, one token in and one token out, over the pure exchanges
 * of src/protocol/sasl and the users' stored SCRAM credentials (no password is ever stored: PLAIN
 * is checked against the SCRAM keys). Unknown users cost the same work as known ones and fail the
 * same way, so a client cannot tell them apart.
 */
import { randomBytes } from 'node:crypto';
import { decodePlainToken } from '../../protocol/sasl/plain.js';
import { authenticationFailed } from '../../protocol/sasl/sasl-error.js';
import { MIN_SCRAM_ITERATIONS, ScramServerExchange, verifyPasswordAsync, type ScramCredential, type ScramMechanism } from '../../protocol/sasl/scram.js';

export type SaslMechanism = 'PLAIN' | ScramMechanism;

export const SASL_MECHANISMS: readonly SaslMechanism[] = ['SCRAM-SHA-512', 'SCRAM-SHA-256', 'PLAIN'];

export function isSaslMechanism(name: string): name is SaslMechanism {
  return (SASL_MECHANISMS as readonly string[]).includes(name);
}

/** Where users' SCRAM credentials come from (the watched `/config/users` cache). */
export interface CredentialSource {
  credential(username: string, mechanism: ScramMechanism): ScramCredential | undefined | Promise<ScramCredential | undefined>;
}

export interface MechanismStep {
  /** The token for the client (empty when the mechanism has nothing to say). */
  readonly response: Buffer;
  /** Set once the client has proven who it is. */
  readonly authenticatedUser?: string;
}

/** One client's exchange; evaluate throws SaslError when the client fails or speaks out of turn. */
export interface ServerMechanism {
  readonly name: SaslMechanism;
  evaluate(token: Buffer): Promise<MechanismStep>;
}

export function serverMechanism(name: SaslMechanism, credentials: CredentialSource): ServerMechanism {
  return name === 'PLAIN' ? new PlainServer(credentials) : new ScramServer(name, credentials);
}

class PlainServer implements ServerMechanism {
  readonly name = 'PLAIN' as const;
  private used = false;

  constructor(private readonly credentials: CredentialSource) {}

  async evaluate(token: Buffer): Promise<MechanismStep> {
    if (this.used) throw authenticationFailed('PLAIN takes one token');
    this.used = true;
    const { username, password } = decodePlainToken(token);
    // The strongest stored keys first; either was made from the same password.
    const sha512 = await this.credentials.credential(username, 'SCRAM-SHA-512');
    const sha256 = sha512 === undefined ? await this.credentials.credential(username, 'SCRAM-SHA-256') : undefined;
    const stored = sha512 ?? sha256;
    const mechanism: ScramMechanism = sha256 !== undefined ? 'SCRAM-SHA-256' : 'SCRAM-SHA-512';
    // An unknown user still pays for one PBKDF2, against keys no password produces.
    const credential = stored ?? decoy(mechanism);
    const valid = await verifyPasswordAsync(mechanism, credential, password);
    if (!valid || stored === undefined) throw authenticationFailed('Invalid username or password');
    return { response: Buffer.alloc(0), authenticatedUser: username };
  }
}

class ScramServer implements ServerMechanism {
  private readonly exchange: ScramServerExchange;
  private round = 0;

  constructor(
    readonly name: ScramMechanism,
    private readonly credentials: CredentialSource,
  ) {
    this.exchange = new ScramServerExchange(name);
  }

  async evaluate(token: Buffer): Promise<MechanismStep> {
    this.round += 1;
    if (this.round === 1) {
      const { username } = this.exchange.receiveClientFirst(token);
      // undefined for an unknown user: the exchange goes on with decoy keys and fails at the proof.
      const credential = await this.credentials.credential(username, this.name);
      return { response: this.exchange.serverFirst(credential) };
    }
    const serverFinal = this.exchange.receiveClientFinal(token);
    return { response: serverFinal, authenticatedUser: this.exchange.username ?? '' };
  }
}

function decoy(mechanism: ScramMechanism): ScramCredential {
  const bytes = mechanism === 'SCRAM-SHA-512' ? 64 : 32;
  return { salt: randomBytes(16), iterations: MIN_SCRAM_ITERATIONS, storedKey: randomBytes(bytes), serverKey: randomBytes(bytes) };
}
