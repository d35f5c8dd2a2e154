/**
 * Reads that never see a write still on its way to disk. The file store (MemoryCoordination with
 * a file) applies a change in memory at once and undoes it if the file cannot be written — a full
 * disk. A registry read in between would serve, and cache forever, a schema under an id that the
 * undo then frees for another schema: a consumer would decode with the wrong schema. So every read
 * through this view first waits for the writes made through it to settle (written or undone).
 * Only this instance writes a file store (its directory is locked), so its own writes are all
 * there is to wait for.
 */
import type { CoordinationStore } from '../../coordination/store.js';

const WRITES = new Set<PropertyKey>(['create', 'ensurePath', 'set', 'delete', 'deleteRecursive', 'transaction']);
const READS = new Set<PropertyKey>(['get', 'exists', 'children']);

export function withCommittedReads(store: CoordinationStore): CoordinationStore {
  const inFlight = new Set<Promise<void>>();
  return new Proxy(store, {
    get(target, property) {
      const value: unknown = Reflect.get(target, property, target);
      if (typeof value !== 'function') return value;
      const method = value as (...args: unknown[]) => unknown;
      if (WRITES.has(property)) {
        return (...args: unknown[]): unknown => {
          const result = method.apply(target, args) as Promise<unknown>;
          const settled = result.then(
            () => undefined,
            () => undefined,
          );
          inFlight.add(settled);
          void settled.then(() => inFlight.delete(settled));
          return result;
        };
      }
      if (READS.has(property)) {
        return async (...args: unknown[]): Promise<unknown> => {
          // A write started while waiting is waited for too: the read runs with none in flight.
          while (inFlight.size > 0) await Promise.all([...inFlight]);
          return method.apply(target, args);
        };
      }
      return method.bind(target);
    },
  });
}
