/** Schemas by global id, and the schema types served (Confluent's SchemasResource). */
import type { FastifyInstance } from 'fastify';
import type { RegistryState } from '../store/registry-state.js';
import { parseSchemaId, pathParam, queryFlag } from './http.js';

export function schemaRoutes(app: FastifyInstance, state: RegistryState): void {
  app.get('/schemas/types', async () => ['AVRO']);

  // ?subject and ?format are tolerated: an id names one schema whatever the subject.
  app.get('/schemas/ids/:id', async (request) => {
    const stored = await state.schemaById(parseSchemaId(pathParam(request, 'id')));
    return {
      ...(stored.schemaType === 'AVRO' ? {} : { schemaType: stored.schemaType }),
      schema: stored.schema,
      ...(queryFlag(request, 'fetchMaxId') ? { maxId: await state.maxId() } : {}),
    };
  });

  app.get('/schemas/ids/:id/schema', async (request, reply) => {
    const stored = await state.schemaById(parseSchemaId(pathParam(request, 'id')));
    return reply.send(stored.schema);
  });

  app.get('/schemas/ids/:id/subjects', async (request) =>
    state.subjectsOfId(parseSchemaId(pathParam(request, 'id')), queryFlag(request, 'deleted')),
  );

  app.get('/schemas/ids/:id/versions', async (request) =>
    state.versionsOfId(parseSchemaId(pathParam(request, 'id')), queryFlag(request, 'deleted')),
  );
}
