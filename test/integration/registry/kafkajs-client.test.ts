/**
 * @kafkajs/confluent-schema-registry 3.9, an independent client, against Tributary's registry on
 * each store: it registers (its GET /config → 404 → POST → PUT /config flow), encodes in the
 * Confluent wire format, decodes through a fresh client (fetching the schema by id), resolves into
 * a reader schema, looks ids up, and reports an incompatible schema.
 */
import { SchemaRegistry, SchemaType } from '@kafkajs/confluent-schema-registry';
import { afterEach, describe, expect, it } from 'vitest';
import { cleanUp, dataDirectory, recordSchema, startRegistry, zookeeperChroot, type Storage } from './registry-support.js';

const userV1 = recordSchema('User', ['name']);
const userV2 = recordSchema('User', ['name', { name: 'age', type: 'int', default: -1 }]);
const userIncompatible = recordSchema('User', ['name', 'email']);

afterEach(cleanUp);

describe.each<[string, () => Storage]>([
  ['the file store', () => ({ dataDir: dataDirectory() })],
  ['the ZooKeeper store', () => ({ zookeeper: zookeeperChroot() })],
])('kafkajs confluent-schema-registry on %s', (_name, storage) => {
  it('registers, encodes and decodes, and finds the ids again', async () => {
    const { url } = await startRegistry(storage());
    const client = new SchemaRegistry({ host: url });

    const { id } = await client.register({ type: SchemaType.AVRO, schema: userV1 }, { subject: 'users-value' });
    expect(id).toBe(1);
    const encoded = await client.encode(id, { name: 'ann' });
    expect(encoded.subarray(0, 5)).toEqual(Buffer.from([0, 0, 0, 0, 1]));

    // A fresh client knows no schema yet: it must fetch id 1 from the registry.
    const fresh = new SchemaRegistry({ host: url });
    expect(await fresh.decode(encoded)).toEqual({ name: 'ann' });

    expect((await client.register({ type: SchemaType.AVRO, schema: userV1 }, { subject: 'users-value' })).id).toBe(1);
    expect(await fresh.getLatestSchemaId('users-value')).toBe(1);
    expect(await fresh.getRegistryIdBySchema('users-value', { type: SchemaType.AVRO, schema: userV1 })).toBe(1);
    expect(await fresh.getRegistryId('users-value', 1)).toBe(1);

    const { id: id2 } = await client.register({ type: SchemaType.AVRO, schema: userV2 }, { subject: 'users-value' });
    expect(id2).toBe(2);
    expect(await fresh.getLatestSchemaId('users-value')).toBe(2);
    // Old bytes read with the new schema: the added field takes its default.
    const readerSchema = JSON.parse(userV2) as Record<string, unknown>;
    expect(await fresh.decode(encoded, { [SchemaType.AVRO]: { readerSchema: readerSchema as never } })).toEqual({ name: 'ann', age: -1 });
    expect(await fresh.decode(await client.encode(id2, { name: 'bo', age: 7 }))).toEqual({ name: 'bo', age: 7 });
  });

  it('reports an incompatible schema and an unknown subject as errors, and a level mismatch client-side', async () => {
    const { url } = await startRegistry(storage());
    const client = new SchemaRegistry({ host: url });
    await client.register({ type: SchemaType.AVRO, schema: userV1 }, { subject: 'users-value' });

    await expect(client.register({ type: SchemaType.AVRO, schema: userIncompatible }, { subject: 'users-value' })).rejects.toMatchObject({
      status: 409,
      message: expect.stringContaining('READER_FIELD_MISSING_DEFAULT_VALUE') as unknown,
    });
    await expect(client.getLatestSchemaId('nobody')).rejects.toMatchObject({
      status: 404,
      message: expect.stringContaining("Subject 'nobody' not found.") as unknown,
    });
    // The client's first registration stored the subject level BACKWARD; asking for FULL differs.
    await expect(
      client.register({ type: SchemaType.AVRO, schema: userV2 }, { subject: 'users-value', compatibility: 'FULL' as never }),
    ).rejects.toThrow('Compatibility does not match the configuration (FULL != BACKWARD)');
  });
});
