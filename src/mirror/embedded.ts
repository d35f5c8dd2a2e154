/**
 * The mirror inside an offline broker process (`tributary broker start … --mirror-config FILE`),
 * as the paper deploys it: the same mirror, targeting the broker it runs in. A mirror that fails
 * stops itself (nothing more is committed) and the broker keeps serving the offline consumers;
 * restart the process once the cause is fixed.
 */
import { securityProtocolOf, type SecurityProtocol } from '../client/security-config.js';
import { TributaryError } from '../common/errors.js';
import type { Logger } from '../common/logger.js';
import { loadMirrorSettingsFile, resolveMirrorSecurity, type MirrorSettings } from './config.js';
import { Mirror } from './mirror.js';

/** Reads and validates the file; call it before starting the broker, so a bad file fails fast. */
export function readEmbeddedMirrorConfig(path: string): MirrorSettings {
  return loadMirrorSettingsFile(path);
}

/**
 * `brokerAddressFor` names this broker's listener of a security protocol (undefined: it has none):
 * the mirror writes through the one its targetSecurity speaks (PLAINTEXT without one). `env` holds
 * the password variables the security blocks name.
 */
export async function startEmbeddedMirror(
  settings: MirrorSettings,
  brokerAddressFor: (protocol: SecurityProtocol) => string | undefined,
  logger: Logger,
  env: Readonly<Record<string, string | undefined>> = process.env,
): Promise<Mirror> {
  const security = resolveMirrorSecurity(settings, env);
  const protocol = securityProtocolOf(security.target);
  const brokerAddress = brokerAddressFor(protocol);
  if (brokerAddress === undefined) {
    throw new TributaryError({
      code: 'CONFIG_INVALID',
      message: `the mirror config's targetSecurity speaks ${protocol}, and this broker has no ${protocol} listener: add one to listeners, or set targetSecurity to the protocol of one it has`,
    });
  }
  // A failure may be reported while Mirror.start is still running, before there is a mirror to stop.
  const started: { mirror?: Mirror; failed: boolean } = { failed: false };
  started.mirror = await Mirror.start({
    settings,
    security,
    target: { bootstrap: [brokerAddress] },
    logger,
    onFatal: () => {
      started.failed = true;
      if (started.mirror !== undefined) void stopAfterFailure(started.mirror, logger);
    },
  });
  if (started.failed) void stopAfterFailure(started.mirror, logger);
  return started.mirror;
}

async function stopAfterFailure(mirror: Mirror, logger: Logger): Promise<void> {
  try {
    await mirror.stop();
    logger.error('the embedded mirror stopped after a failure (see above); the broker keeps running');
  } catch (error) {
    logger.error({ err: error }, 'the embedded mirror did not stop cleanly after a failure');
  }
}
