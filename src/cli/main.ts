/**
 * Process entry of `tributary`: parses argv, runs the command, maps failures to exit statuses.
 * The only module that touches `process.argv` and `process.exit`.
 */
import { CommanderError } from 'commander';
import { isTributaryError } from '../common/errors.js';
import { NOT_IMPLEMENTED_EXIT_CODE, type CommandIo } from './not-implemented.js';
import { buildProgram } from './program.js';
import { applyZooKeeperAuth } from './service-credentials.js';

const io: CommandIo = {
  writeOut: (text) => process.stdout.write(text),
  writeErr: (text) => process.stderr.write(text),
};

export async function main(argv: readonly string[]): Promise<number> {
  const program = buildProgram(io).exitOverride();
  try {
    applyZooKeeperAuth(process.env);
    await program.parseAsync([...argv], { from: 'user' });
    return 0;
  } catch (error) {
    if (error instanceof CommanderError) return error.exitCode; // commander already printed why
    if (isTributaryError(error)) {
      if (error.code === 'NOT_IMPLEMENTED') {
        if (error.details['printed'] !== true) io.writeErr(`tributary: ${error.message}\n`);
        return NOT_IMPLEMENTED_EXIT_CODE;
      }
      io.writeErr(`tributary: ${error.message} [${error.code}]\n`);
      return 1;
    }
    io.writeErr(`tributary: unexpected failure: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    return 1;
  }
}

process.exitCode = await main(process.argv.slice(2));
