/**
 * The compatibility test (Confluent's CompatibilityResource): would a schema be accepted? Against
 * one version (or the latest) it checks only that version in the subject level's direction;
 * without a version, exactly the check registration makes.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { TributaryError } from '../../common/errors.js';
import { describeIncompatibility } from '../compatibility.js';
import type { RegistryState, VersionSpec } from '../store/registry-state.js';
import { parseVersionSpec, pathParam, queryFlag, schemaRequestOf } from './http.js';

export function compatibilityRoutes(app: FastifyInstance, state: RegistryState): void {
  app.post('/compatibility/subjects/:subject/versions/:version', async (request) =>
    test(request, state, parseVersionSpec(pathParam(request, 'version'))),
  );
  app.post('/compatibility/subjects/:subject/versions', async (request) => test(request, state, 'all'));
}

async function test(request: FastifyRequest, state: RegistryState, against: VersionSpec | 'all'): Promise<Record<string, unknown>> {
  const verbose = queryFlag(request, 'verbose');
  let problems;
  try {
    problems = await state.testCompatibility(pathParam(request, 'subject'), schemaRequestOf(request), against);
  } catch (error) {
    // Confluent answers an unparsable candidate with a message instead of 42201 when verbose.
    if (verbose && error instanceof TributaryError && (error.code === 'SCHEMA_INVALID' || error.code === 'SCHEMA_TYPE_UNSUPPORTED')) {
      return { is_compatible: false, messages: [error.message] };
    }
    throw error;
  }
  const compatible = problems.length === 0;
  return verbose ? { is_compatible: compatible, messages: problems.map(describeIncompatibility) } : { is_compatible: compatible };
}
