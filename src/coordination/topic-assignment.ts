/**
 * A topic's replica assignment, the data of `/brokers/topics/<topic>` (paths.ts `topicPath`):
 * for each partition, its replicas in preference order, the first being the preferred leader.
 *
 *   written  {"version":2,"partitions":{"0":[1,2,3],"1":[2,3,1]}}
 *   read     that, Kafka's version 1 (same shape), and the single-broker form of Tributary before
 *            replication, {"partitions":{"0":1}}: a bare broker id b reads as [b]
 *            (replication.md §5.2), so existing clusters need no migration step
 *
 * Valid means: at least one partition, numbered 0..n-1 with none missing; each replica list
 * non-empty, of broker ids (int32, ≥ 0), none twice. Lists of different lengths are allowed here
 * (a reassignment may leave them so); placement (replica-placement.ts) makes them equal. Fields
 * other than `version` and `partitions` (Kafka's adding_replicas, removing_replicas, topic_id)
 * are ignored; a version above 2 is refused rather than half-understood.
 */
import { z } from 'zod';
import { TributaryError } from '../common/errors.js';

/** partition → replicas in preference order (first = preferred leader) */
export type ReplicaAssignment = ReadonlyMap<number, readonly number[]>;

const INT32_MAX = 2 ** 31 - 1;
const DECIMAL = /^(0|[1-9]\d*)$/;

const assignmentSchema = z.object({
  version: z.union([z.literal(1), z.literal(2)], 'must be 1 or 2: a newer version is not understood here').optional(),
  partitions: z.record(z.string(), z.union([z.number(), z.array(z.number())], 'must be a broker id or a list of broker ids')),
});

/** The node's bytes for `assignment` (always the version 2 form); throws INVALID_TOPIC_ASSIGNMENT rather than write what could not be read back. */
export function encodeTopicAssignment(assignment: ReplicaAssignment): Buffer {
  const problems = problemsOf(assignment);
  if (problems.length > 0) throw invalidAssignment('the topic assignment to write is', problems);
  const partitions: Record<string, number[]> = {};
  // Integer-like keys are kept in ascending order by JSON.stringify, whatever the insertion order.
  for (const [partition, replicas] of assignment) partitions[String(partition)] = [...replicas];
  return Buffer.from(JSON.stringify({ version: 2, partitions }));
}

/** Reads a topic node's bytes, in either form; `where` (usually its path) names it in the error if they are not a valid assignment. */
export function decodeTopicAssignment(data: Buffer, where: string): ReplicaAssignment {
  const what = `${where} holds ${JSON.stringify(data.toString('utf8').slice(0, 200))}, which is`;
  let json: unknown;
  try {
    json = JSON.parse(data.toString('utf8'));
  } catch (error) {
    throw invalidAssignment(what, [`not JSON (${(error as Error).message})`], { where }, error);
  }
  const result = assignmentSchema.safeParse(json);
  if (!result.success) {
    const problems = result.error.issues.map((issue) => `${issue.path.map(String).join('.') || '(top level)'}: ${issue.message}`);
    throw invalidAssignment(what, problems, { where }, result.error);
  }
  const entries: [number, number[]][] = [];
  const badKeys: string[] = [];
  for (const [key, value] of Object.entries(result.data.partitions)) {
    if (!DECIMAL.test(key)) badKeys.push(`partitions.${key}: the key is not a partition number`);
    else entries.push([Number(key), typeof value === 'number' ? [value] : value]);
  }
  const assignment = new Map(entries.sort(([a], [b]) => a - b));
  const problems = [...badKeys, ...problemsOf(assignment)];
  if (problems.length > 0) throw invalidAssignment(what, problems, { where });
  return assignment;
}

/** What is wrong with an assignment, one line per problem (none when it is valid). */
function problemsOf(assignment: ReplicaAssignment): string[] {
  const problems: string[] = [];
  if (assignment.size === 0) return ['it has no partitions'];
  for (const [partition, replicas] of assignment) {
    if (!Number.isSafeInteger(partition) || partition < 0) {
      problems.push(`partition ${String(partition)} is not a partition number`);
      continue;
    }
    if (replicas.length === 0) problems.push(`partition ${partition} has no replicas`);
    const seen = new Set<number>();
    for (const broker of replicas) {
      if (!Number.isSafeInteger(broker) || broker < 0 || broker > INT32_MAX) problems.push(`partition ${partition} lists ${String(broker)}, which is not a broker id`);
      else if (seen.has(broker)) problems.push(`partition ${partition} lists broker ${broker} more than once`);
      seen.add(broker);
    }
  }
  const missing: number[] = [];
  for (let partition = 0; partition < assignment.size && missing.length < 5; partition += 1) {
    if (!assignment.has(partition)) missing.push(partition);
  }
  if (missing.length > 0) {
    problems.push(`partitions must be numbered 0..${assignment.size - 1} with none missing, but ${missing.join(', ')} ${missing.length === 1 ? 'is' : 'are'} missing`);
  }
  return problems;
}

function invalidAssignment(what: string, problems: readonly string[], details: Readonly<Record<string, unknown>> = {}, cause?: unknown): TributaryError {
  return new TributaryError({
    code: 'INVALID_TOPIC_ASSIGNMENT',
    message: `${what} not a valid topic assignment: ${problems.slice(0, 5).join('; ')}`,
    ...(cause === undefined ? {} : { cause }),
    details: { ...details, problems },
  });
}
