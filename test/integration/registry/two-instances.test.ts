/**
 * Two stateless registry instances on one ZooKeeper: 100 concurrent registrations of 20 distinct
 * schemas, spread over both, give every schema exactly one id and no id to two schemas; each
 * instance reads what the other wrote.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { cleanUp, http, recordSchema, startRegistry, zookeeperChroot } from './registry-support.js';

afterEach(cleanUp);

describe('two registry instances on one ZooKeeper', () => {
  it('allocate ids atomically under 100 concurrent registrations of 20 schemas', async () => {
    const zookeeper = zookeeperChroot();
    const instances = [await startRegistry({ zookeeper }), await startRegistry({ zookeeper })];
    const schemas = Array.from({ length: 20 }, (_, index) => recordSchema(`Event${index}`, ['id', `field${index}`]));

    const results = await Promise.all(
      Array.from({ length: 100 }, async (_, index) => {
        const schemaIndex = index % 20;
        // Each schema goes to up to three subjects, so some registrations also race on one subject.
        const subject = `event-${schemaIndex}-${index % 3}`;
        const url = instances[index % 2]?.url ?? '';
        const answer = await http(url, 'POST', `/subjects/${subject}/versions`, { schema: schemas[schemaIndex] });
        return { schemaIndex, subject, answer };
      }),
    );

    for (const { answer } of results) expect(answer.status).toBe(200);
    const idsBySchema = new Map<number, Set<number>>();
    for (const { schemaIndex, answer } of results) {
      const { id } = answer.json as { id: number };
      idsBySchema.set(schemaIndex, (idsBySchema.get(schemaIndex) ?? new Set()).add(id));
    }
    expect(idsBySchema.size).toBe(20);
    for (const ids of idsBySchema.values()) expect(ids.size).toBe(1);
    const ids = [...idsBySchema.values()].map((set) => [...set][0] ?? 0);
    expect(new Set(ids).size).toBe(20);

    for (const instance of instances) {
      for (const [schemaIndex, set] of idsBySchema) {
        const id = [...set][0] ?? 0;
        const byId = await http(instance.url, 'GET', `/schemas/ids/${id}`);
        expect(JSON.parse((byId.json as { schema: string }).schema)).toEqual(JSON.parse(schemas[schemaIndex] ?? ''));
      }
      const subjects = (await http(instance.url, 'GET', '/subjects')).json as string[];
      expect(subjects).toHaveLength(new Set(results.map((result) => result.subject)).size);
      for (const subject of subjects) expect((await http(instance.url, 'GET', `/subjects/${subject}/versions`)).json).toEqual([1]);
    }
    // The counter moved once per new schema: no id was burnt by a lost race.
    expect(((await http(instances[1]?.url ?? '', 'GET', `/schemas/ids/${ids[0]}?fetchMaxId=true`)).json as { maxId: number }).maxId).toBe(20);
  });
});
