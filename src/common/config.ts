/**
 * Validation of configuration from any source (CLI flags, YAML files, ZooKeeper nodes) with zod.
 * A bad value fails with `CONFIG_INVALID`, naming the source and every offending field, so the
 * operator can fix all of them in one go.
 */
import { z } from 'zod';
import { TributaryError } from './errors.js';

export function parseConfig<Schema extends z.ZodType>(
  schema: Schema,
  input: unknown,
  source: string,
): z.output<Schema> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  const problems = result.error.issues.map((issue) => {
    const where = issue.path.length === 0 ? '(top level)' : issue.path.map(String).join('.');
    return `${where}: ${issue.message}`;
  });
  throw new TributaryError({
    code: 'CONFIG_INVALID',
    message: `invalid configuration in ${source}: ${problems.join('; ')}. Fix these values and try again.`,
    cause: result.error,
    details: { source, problems },
  });
}

/** `HOST:PORT` with a numeric port in range, as flags such as `--listen` take it. */
export const hostPortSchema = z.string().refine((value) => {
  const match = /^(\[[0-9a-fA-F:]+\]|[^:\s]+):(\d{1,5})$/.exec(value);
  return match !== null && Number(match[2]) <= 65535;
}, 'expected HOST:PORT with a port from 0 to 65535');

/** `HOST:PORT[,HOST:PORT…][/chroot]`, the ZooKeeper connect string. */
export const zookeeperConnectSchema = z
  .string()
  .regex(
    /^[^,/\s]+:\d{1,5}(,[^,/\s]+:\d{1,5})*(\/[^\s]*)?$/,
    'expected HOST:PORT[,HOST:PORT…][/chroot]',
  );

export const logLevelSchema = z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']);
export type LogLevel = z.infer<typeof logLevelSchema>;
