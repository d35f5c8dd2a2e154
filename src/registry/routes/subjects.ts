/**
 * Subjects and their versions: register, look up, list, read, delete (Confluent's
 * SubjectsResource and SubjectVersionsResource).
 */
import type { FastifyInstance } from 'fastify';
import type { RegistryState, SubjectVersion } from '../store/registry-state.js';
import { parseVersionSpec, pathParam, queryFlag, schemaRequestOf } from './http.js';

/** The version shape Confluent answers with; `schemaType` is left out for AVRO, as before 8.0. */
export function versionBody(version: SubjectVersion): Record<string, unknown> {
  return {
    subject: version.subject,
    version: version.version,
    id: version.id,
    ...(version.schemaType === 'AVRO' ? {} : { schemaType: version.schemaType }),
    schema: version.schema,
  };
}

export function subjectRoutes(app: FastifyInstance, state: RegistryState): void {
  app.get('/subjects', async (request) => state.subjects(queryFlag(request, 'deleted')));

  app.get('/subjects/:subject/versions', async (request) => state.versions(pathParam(request, 'subject'), queryFlag(request, 'deleted')));

  // ?normalize is accepted and ignored: schemas are always deduplicated by their canonical form.
  app.post('/subjects/:subject/versions', async (request) => {
    const registration = await state.register(pathParam(request, 'subject'), schemaRequestOf(request));
    return { id: registration.id };
  });

  app.post('/subjects/:subject', async (request) =>
    versionBody(await state.lookup(pathParam(request, 'subject'), schemaRequestOf(request), queryFlag(request, 'deleted'))),
  );

  app.delete('/subjects/:subject', async (request) => state.deleteSubject(pathParam(request, 'subject'), queryFlag(request, 'permanent')));

  app.get('/subjects/:subject/versions/:version', async (request) => {
    const spec = parseVersionSpec(pathParam(request, 'version'));
    return versionBody(await state.version(pathParam(request, 'subject'), spec, queryFlag(request, 'deleted')));
  });

  app.get('/subjects/:subject/versions/:version/schema', async (request, reply) => {
    const spec = parseVersionSpec(pathParam(request, 'version'));
    const version = await state.version(pathParam(request, 'subject'), spec, queryFlag(request, 'deleted'));
    return reply.send(version.schema);
  });

  // No schema references exist here, so nothing refers to any version.
  app.get('/subjects/:subject/versions/:version/referencedby', async (request) => {
    const spec = parseVersionSpec(pathParam(request, 'version'));
    await state.version(pathParam(request, 'subject'), spec, true);
    return [];
  });

  app.delete('/subjects/:subject/versions/:version', async (request) => {
    const spec = parseVersionSpec(pathParam(request, 'version'));
    return state.deleteVersion(pathParam(request, 'subject'), spec, queryFlag(request, 'permanent'));
  });
}
