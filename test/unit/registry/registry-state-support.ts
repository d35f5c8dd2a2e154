/** Helpers for the registry state tests: schemas to register and a dump of the stored tree. */
import type { CoordinationStore } from '../../../src/coordination/store.js';

/** A record schema named `name` with string fields `fields` (no defaults). */
export function recordSchema(name: string, fields: readonly string[], extra: Readonly<Record<string, unknown>> = {}): string {
  return JSON.stringify({ type: 'record', name, fields: fields.map((field) => ({ name: field, type: 'string' })), ...extra });
}

/** Every node under `root` with its data and version: equal dumps mean nothing was written. */
export async function dumpTree(store: CoordinationStore, root = '/schemas'): Promise<Record<string, string>> {
  const dump: Record<string, string> = {};
  const visit = async (path: string): Promise<void> => {
    const node = await store.get(path);
    if (node === undefined) return;
    dump[path] = `v${node.version} ${node.data.toString('utf8')}`;
    for (const child of (await store.children(path)) ?? []) await visit(`${path}/${child}`);
  };
  await visit(root);
  return dump;
}
