/**
 * Compatibility configuration, global and per subject (Confluent's ConfigResource), and the mode
 * (ModeResource), which is always READWRITE here. Note Confluent's asymmetry, which clients
 * depend on: PUT takes and echoes {"compatibility"}, GET and DELETE answer {"compatibilityLevel"}.
 */
import type { FastifyInstance } from 'fastify';
import { registryError } from '../errors.js';
import type { RegistryState } from '../store/registry-state.js';
import { compatibilityLevelOf, jsonObjectBody, pathParam, queryFlag } from './http.js';

const MODES = ['READWRITE', 'READONLY', 'READONLY_OVERRIDE', 'IMPORT', 'FORWARD'];

export function configRoutes(app: FastifyInstance, state: RegistryState): void {
  app.get('/config', async () => ({ compatibilityLevel: await state.globalCompatibility() }));

  app.put('/config', async (request) => {
    const level = compatibilityLevelOf(jsonObjectBody(request)['compatibility']);
    await state.setGlobalCompatibility(level);
    return { compatibility: level };
  });

  app.delete('/config', async () => ({ compatibilityLevel: await state.deleteGlobalCompatibility() }));

  app.get('/config/:subject', async (request) => {
    const subject = pathParam(request, 'subject');
    const level = await state.subjectCompatibility(subject);
    if (level !== undefined) return { compatibilityLevel: level };
    if (queryFlag(request, 'defaultToGlobal')) return { compatibilityLevel: await state.globalCompatibility() };
    throw registryError('SUBJECT_CONFIG_NOT_FOUND', `Subject '${subject}' does not have subject-level compatibility configured`, { details: { subject } });
  });

  app.put('/config/:subject', async (request) => {
    const level = compatibilityLevelOf(jsonObjectBody(request)['compatibility']);
    await state.setSubjectCompatibility(pathParam(request, 'subject'), level);
    return { compatibility: level };
  });

  app.delete('/config/:subject', async (request) => ({
    compatibilityLevel: await state.deleteSubjectCompatibility(pathParam(request, 'subject')),
  }));

  app.get('/mode', async () => ({ mode: 'READWRITE' }));
  app.get('/mode/:subject', async () => ({ mode: 'READWRITE' }));
  app.put('/mode', async (request) => ({ mode: modeOf(jsonObjectBody(request)['mode']) }));
  app.put('/mode/:subject', async (request) => ({ mode: modeOf(jsonObjectBody(request)['mode']) }));
}

/** Only READWRITE can be set: this registry has no read-only or import modes. */
function modeOf(value: unknown): string {
  const mode = typeof value === 'string' ? value.trim().toUpperCase() : value;
  if (mode === 'READWRITE') return mode;
  if (typeof mode === 'string' && MODES.includes(mode)) {
    throw registryError('OPERATION_NOT_PERMITTED', `the mode ${mode} is not supported: this registry is always READWRITE`);
  }
  throw registryError('MODE_INVALID', `Invalid mode ${JSON.stringify(value ?? null)}. Valid values are READWRITE, READONLY, IMPORT and FORWARD (only READWRITE is supported here).`);
}
