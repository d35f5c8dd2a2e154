/**
 * Several registry instances on one store: concurrent registrations never give one schema two
 * ids or one id to two schemas; lost races are retried; a write whose answer was lost is found
 * again rather than repeated; a write that keeps losing gives up without writing anything.
 */
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../../src/common/logger.js';
import { MemoryCoordination } from '../../../src/coordination/memory-store.js';
import { coordinationError, type CoordinationStore, type TransactionOp, type TransactionResult } from '../../../src/coordination/store.js';
import { parseAvroSchema } from '../../../src/registry/avro-schema.js';
import { RegistryState } from '../../../src/registry/store/registry-state.js';
import { dumpTree, recordSchema } from './registry-state-support.js';

const logger = createLogger({ name: 'registry-state-test', level: 'silent' });

type TransactionHook = (ops: readonly TransactionOp[], commit: () => Promise<TransactionResult[]>) => Promise<TransactionResult[]>;

/** `inner` with its transactions passed through `hook` (an in-process fake of a racing or flaky store). */
function hookTransactions(inner: CoordinationStore, hook: TransactionHook): CoordinationStore {
  return new Proxy(inner, {
    get(target, property, receiver) {
      if (property === 'transaction') return (ops: readonly TransactionOp[]) => hook(ops, () => target.transaction(ops));
      const value: unknown = Reflect.get(target, property, receiver);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}

describe('concurrent registrations', () => {
  it('give 20 distinct schemas exactly one id each over 100 registrations on two instances', async () => {
    const tree = new MemoryCoordination({ logger });
    const instances = [await RegistryState.open(tree.session(), { logger }), await RegistryState.open(tree.session(), { logger })];
    // Distinct record names: under BACKWARD, different schemas can share a subject only if compatible.
    const schemas = Array.from({ length: 20 }, (_, index) => recordSchema(`Event${index}`, ['id']));
    const registrations = Array.from({ length: 100 }, async (_, index) => {
      const schemaIndex = index % 20;
      const subject = `subject-${schemaIndex}-${index % 3}`;
      const instance = instances[index % 2];
      if (instance === undefined) throw new Error('no instance');
      const result = await instance.register(subject, { schema: schemas[schemaIndex] ?? '' });
      return { schemaIndex, subject, ...result };
    });
    const results = await Promise.all(registrations);

    const idsBySchema = new Map<number, Set<number>>();
    for (const { schemaIndex, id } of results) idsBySchema.set(schemaIndex, (idsBySchema.get(schemaIndex) ?? new Set()).add(id));
    for (const ids of idsBySchema.values()) expect(ids.size).toBe(1);
    const ids = [...idsBySchema.values()].map((set) => [...set][0]);
    expect(new Set(ids).size).toBe(20);
    expect([...ids].sort((a, b) => (a ?? 0) - (b ?? 0))).toEqual(Array.from({ length: 20 }, (_, index) => index + 1));

    // Every id reads back as its own schema, and every subject holds exactly one version of it.
    const reader = instances[0];
    if (reader === undefined) throw new Error('no instance');
    for (const [schemaIndex, set] of idsBySchema) {
      const id = [...set][0] ?? 0;
      expect(parseAvroSchema((await reader.schemaById(id)).schema).fingerprint).toBe(parseAvroSchema(schemas[schemaIndex] ?? '').fingerprint);
    }
    for (const subject of new Set(results.map((result) => result.subject))) expect(await reader.versions(subject)).toEqual([1]);
    expect(await reader.maxId()).toBe(20);
  });

  it('retries a registration that lost the id counter to another instance', async () => {
    const tree = new MemoryCoordination({ logger });
    const rival = await RegistryState.open(tree.session(), { logger });
    let raced = false;
    const store = hookTransactions(tree.session(), async (_ops, commit) => {
      if (!raced) {
        raced = true;
        await rival.register('rival', { schema: recordSchema('Rival', ['x']) }); // takes id 1 first
      }
      return commit();
    });
    const state = await RegistryState.open(store, { logger });
    expect(await state.register('mine', { schema: recordSchema('Mine', ['y']) })).toEqual({ id: 2, version: 1, created: true });
    expect(await state.versionsOfId(1)).toEqual([{ subject: 'rival', version: 1 }]);
  });

  it('finds a registration whose answer was lost instead of registering it twice', async () => {
    const tree = new MemoryCoordination({ logger });
    let lost = false;
    const store = hookTransactions(tree.session(), async (_ops, commit) => {
      const results = await commit();
      if (!lost) {
        lost = true;
        throw coordinationError('CONNECTION_LOSS', { operation: 'transaction' });
      }
      return results;
    });
    const state = await RegistryState.open(store, { logger });
    expect(await state.register('s', { schema: recordSchema('A', ['a']) })).toEqual({ id: 1, version: 1, created: false });
    expect(await state.versions('s')).toEqual([1]);
    expect(await state.maxId()).toBe(1);
  });

  it('gives up after its attempts when every write loses, having written nothing', async () => {
    const tree = new MemoryCoordination({ logger });
    const session = tree.session();
    let attempts = 0;
    const store = hookTransactions(session, async () => {
      attempts += 1;
      throw coordinationError('BAD_VERSION', { operation: 'transaction' });
    });
    const state = await RegistryState.open(store, { logger, maxAttempts: 3 });
    const before = await dumpTree(session);
    await expect(state.register('s', { schema: recordSchema('A', ['a']) })).rejects.toMatchObject({
      code: 'STORE_ERROR',
      retriable: true,
      message: expect.stringContaining('in 3 attempts') as unknown,
    });
    expect(attempts).toBe(3);
    expect(await dumpTree(session)).toEqual(before);
  });

  it('does not repeat a delete whose answer was lost: the outcome is reported unknown', async () => {
    const tree = new MemoryCoordination({ logger });
    const plain = await RegistryState.open(tree.session(), { logger });
    await plain.register('s', { schema: recordSchema('A', ['a']) });
    const store = hookTransactions(tree.session(), async (_ops, commit) => {
      await commit();
      throw coordinationError('CONNECTION_LOSS', { operation: 'transaction' });
    });
    const state = await RegistryState.open(store, { logger });
    await expect(state.deleteSubject('s')).rejects.toMatchObject({ code: 'CONNECTION_LOSS' });
    expect(await plain.versions('s', true)).toEqual([1]);
    await expect(plain.versions('s')).rejects.toMatchObject({ code: 'SUBJECT_NOT_FOUND' });
  });
});
