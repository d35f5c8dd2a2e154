/**
 * Adding and removing ACLs in the coordination store, shared by the CreateAcls / DeleteAcls
 * handlers and `tributary acls`. Each resource pattern's node is changed by one conditional
 * read-modify-write (coordination/acl-store.ts), so concurrent changes do not lose entries.
 */
import { readAllAcls, updateResourceAcls, type StoredAclEntry } from '../../coordination/acl-store.js';
import type { CoordinationStore } from '../../coordination/store.js';
import { bindingToStored, filterMatches, storedToBindings, type AclBinding, type AclBindingFilter } from './acl.js';

/** Stores the bindings (already valid: acl.ts invalidBindingReason); one outcome per binding, in order. */
export async function addAcls(store: CoordinationStore, bindings: readonly AclBinding[]): Promise<(Error | undefined)[]> {
  const byResource = new Map<string, { indexes: number[]; entries: StoredAclEntry[]; resource: ReturnType<typeof bindingToStored>['resource'] }>();
  bindings.forEach((binding, index) => {
    const { resource, entry } = bindingToStored(binding);
    const key = JSON.stringify([resource.patternType, resource.resourceType, resource.name]);
    const group = byResource.get(key) ?? { indexes: [], entries: [], resource };
    group.indexes.push(index);
    group.entries.push(entry);
    byResource.set(key, group);
  });
  const outcomes: (Error | undefined)[] = bindings.map(() => undefined);
  for (const { indexes, entries, resource } of byResource.values()) {
    try {
      await updateResourceAcls(store, resource, (current) => [...current, ...entries]);
    } catch (error) {
      for (const index of indexes) outcomes[index] = error as Error;
    }
  }
  return outcomes;
}

export interface RemovedAcl {
  readonly binding: AclBinding;
  readonly error?: Error;
}

/**
 * Deletes every stored ACL that one of the filters matches; per filter, the ACLs it removed (an
 * ACL two filters match is listed under the first). What is removed is decided on each node as
 * it is written, so an ACL added meanwhile by someone else is judged too.
 */
export async function removeAcls(store: CoordinationStore, filters: readonly AclBindingFilter[]): Promise<RemovedAcl[][]> {
  const results: RemovedAcl[][] = filters.map(() => []);
  const firstMatch = (binding: AclBinding): number => filters.findIndex((filter) => filterMatches(filter, binding));
  for (const stored of await readAllAcls(store)) {
    if (!storedToBindings(stored).some((binding) => firstMatch(binding) >= 0)) continue;
    let removed: AclBinding[] = [];
    try {
      await updateResourceAcls(store, stored.resource, (current) => {
        removed = [];
        const kept: StoredAclEntry[] = [];
        for (const entry of current) {
          const [binding] = storedToBindings({ resource: stored.resource, entries: [entry] });
          if (binding !== undefined && firstMatch(binding) >= 0) removed.push(binding);
          else kept.push(entry);
        }
        return kept;
      });
      for (const binding of removed) results[firstMatch(binding)]?.push({ binding });
    } catch (error) {
      for (const binding of storedToBindings(stored)) if (firstMatch(binding) >= 0) results[firstMatch(binding)]?.push({ binding, error: error as Error });
    }
  }
  return results;
}

/** Every stored ACL, read from the store now. */
export async function listAcls(store: CoordinationStore): Promise<AclBinding[]> {
  return (await readAllAcls(store)).flatMap(storedToBindings);
}
