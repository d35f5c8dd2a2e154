/** `tributary schemas register|get|list|check|config`: a registry's schemas from the terminal. */
import { notImplemented, type CommandIo } from '../not-implemented.js';

export interface SchemasRegisterOptions {
  readonly registry: string;
  readonly subject: string;
  readonly file: string;
}
export interface SchemasGetOptions {
  readonly registry: string;
  readonly id?: string;
  readonly subject?: string;
  readonly version: string;
}
export interface SchemasListOptions {
  readonly registry: string;
}
export interface SchemasCheckOptions {
  readonly registry: string;
  readonly subject: string;
  readonly file: string;
}
export interface SchemasConfigOptions {
  readonly registry: string;
  readonly subject?: string;
  readonly level?: string;
}

export function registerSchema(io: CommandIo, _options: SchemasRegisterOptions): Promise<void> {
  return Promise.resolve(notImplemented(io, 'schemas register', 7));
}
export function getSchema(io: CommandIo, _options: SchemasGetOptions): Promise<void> {
  return Promise.resolve(notImplemented(io, 'schemas get', 7));
}
export function listSchemas(io: CommandIo, _options: SchemasListOptions): Promise<void> {
  return Promise.resolve(notImplemented(io, 'schemas list', 7));
}
export function checkSchema(io: CommandIo, _options: SchemasCheckOptions): Promise<void> {
  return Promise.resolve(notImplemented(io, 'schemas check', 7));
}
export function configureSchemas(io: CommandIo, _options: SchemasConfigOptions): Promise<void> {
  return Promise.resolve(notImplemented(io, 'schemas config', 7));
}
