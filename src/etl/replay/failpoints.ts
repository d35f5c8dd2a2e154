/**
 * Failpoints of hour swaps (replays and rollbacks), like the loader's (failpoints.ts): the CLI
 * reads TRIBUTARY_ETL_FAILPOINT=<name>[:<n>] and kills its own process with SIGKILL on the n-th
 * pass; unit tests pass a hook that throws.
 *
 *   swap-after-stage     a replay's file is staged (before anything is claimed)
 *   swap-after-fence     the fencing commit is published, the swap not yet claimed
 *   swap-after-claim     the swap is claimed, no hour moved yet
 *   swap-after-rename    after each rename of the swap; `:1` stops mid-swap of the first hour
 *                        (its live folder moved to versions/, the new one not yet in place)
 *   swap-before-publish  every hour swapped, the swap not yet published
 *   swap-after-publish   done
 */
import { TributaryError } from '../../common/errors.js';

export const SWAP_FAILPOINT_NAMES = ['swap-after-stage', 'swap-after-fence', 'swap-after-claim', 'swap-after-rename', 'swap-before-publish', 'swap-after-publish'] as const;
export type SwapFailpointName = (typeof SWAP_FAILPOINT_NAMES)[number];

export function parseSwapFailpoint(spec: string): { readonly name: SwapFailpointName; readonly hit: number } {
  const match = /^([a-z-]+)(?::(\d+))?$/.exec(spec.trim());
  const name = SWAP_FAILPOINT_NAMES.find((candidate) => candidate === match?.[1]);
  const hit = match?.[2] === undefined ? 1 : Number(match[2]);
  if (match === null || name === undefined || hit < 1) {
    throw new TributaryError({
      code: 'CONFIG_INVALID',
      message: `failpoint "${spec}" is not <name>[:<n>] with n ≥ 1 and a name among ${SWAP_FAILPOINT_NAMES.join(', ')}`,
      details: { spec },
    });
  }
  return { name, hit };
}

export function swapFailpointHook(failpoint: { readonly name: SwapFailpointName; readonly hit: number }, stop: () => void): (point: SwapFailpointName) => void {
  let passes = 0;
  return (point) => {
    if (point !== failpoint.name) return;
    passes += 1;
    if (passes === failpoint.hit) stop();
  };
}
