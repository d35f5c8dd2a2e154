import { TributaryError } from '../common/errors.js';

/** Where a command writes: the real process streams in production, buffers in tests. */
export interface CommandIo {
  readonly writeOut: (text: string) => void;
  readonly writeErr: (text: string) => void;
}

/** Exit status of a command whose capability has not landed yet. */
export const NOT_IMPLEMENTED_EXIT_CODE = 2;

export function notImplemented(io: CommandIo, command: string, issue: number): never {
  io.writeErr(
    `tributary ${command}: not implemented yet (tracked in issue #${issue}).\n` +
      'Run `tributary --help` to see what exists today.\n',
  );
  throw new TributaryError({
    code: 'NOT_IMPLEMENTED',
    message: `tributary ${command} is not implemented yet (issue #${issue})`,
    details: { command, issue, exitCode: NOT_IMPLEMENTED_EXIT_CODE, printed: true },
  });
}
