/**
 * Sample traffic for the containers (docker/README.md): PageViewEvents, as `tributary demo` makes
 * them (src/demo/sample-events.ts), produced to a topic of the online cluster in the registry's
 * Avro framing, with origin headers and PRODUCER audit counts, so a load and the audit have
 * something to show. Event times cover the last whole hours that are already closed.
 *
 *   npx tsx docker/produce-page-views.ts --bootstrap-server online-broker-1:9092 \
 *     --registry http://registry:8081 [--topic page-views] [--events 10000] [--hours 3]
 *
 * Registers PageViewEvent under <topic>-value (and AuditCount under _audit-value) first. Create
 * the topic beforehand to choose its partitions; otherwise the broker creates it with its
 * defaults, if it allows that. Prints what it produced. A registry that asks for credentials or
 * has a private CA gets them from TRIBUTARY_REGISTRY_USER_INFO[_FILE] and TRIBUTARY_REGISTRY_CA_FILE
 * (src/registry/client-config.ts).
 */
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { AUDIT_SUBJECT, auditCountSchema } from '../src/audit/audit-count.js';
import { AuditedProducer } from '../src/audit/audited-producer.js';
import { ORIGIN_HEADER } from '../src/audit/origin.js';
import { DEFAULT_LATENESS_MS } from '../src/audit/windows.js';
import { createLogger } from '../src/common/logger.js';
import { pastHours, samplePageViews } from '../src/demo/sample-events.js';
import { RegistryClient } from '../src/registry/client.js';
import { registryClientSecurity } from '../src/registry/client-config.js';
import { AvroSerializer } from '../src/registry/serde/serializer.js';

const { values } = parseArgs({
  options: {
    'bootstrap-server': { type: 'string' },
    registry: { type: 'string' },
    topic: { type: 'string', default: 'page-views' },
    events: { type: 'string', default: '10000' },
    hours: { type: 'string', default: '3' },
  },
});
const bootstrap = values['bootstrap-server'];
const registryUrl = values.registry;
const events = Number(values.events);
const hours = Number(values.hours);
if (bootstrap === undefined || registryUrl === undefined || !Number.isSafeInteger(events) || events < 1 || !Number.isSafeInteger(hours) || hours < 1) {
  process.stderr.write('usage: produce-page-views.ts --bootstrap-server HOST:PORT[,…] --registry URL [--topic NAME] [--events N ≥ 1] [--hours N ≥ 1]\n');
  process.exit(2);
}

const logger = createLogger({ name: 'produce-page-views', level: 'warn' });
const registry = new RegistryClient({ url: registryUrl, logger, ...registryClientSecurity({}, process.env) });
const subject = `${values.topic}-value`;
const schema = await readFile(new URL('../schemas/PageViewEvent.avsc', import.meta.url), 'utf8');
await registry.register(subject, schema);
await registry.register(AUDIT_SUBJECT, auditCountSchema().text);

// Hours whose audit windows are already closed (as the demo picks them), so the report can say OK.
const span = pastHours(Date.now(), hours, DEFAULT_LATENESS_MS + 60_000);
const serializer = new AvroSerializer(registry, { autoRegister: false });
const producer = await AuditedProducer.connect({ bootstrap: bootstrap.split(','), registry, acks: -1, clientId: 'produce-page-views', logger, audit: { publishIntervalMs: 0 } });
try {
  const records = [];
  for (const event of samplePageViews(events, span)) {
    records.push({
      key: event.memberId === null ? null : Buffer.from(String(event.memberId)),
      value: await serializer.encode(subject, event, schema),
      timestamp: event.header.time,
      headers: [{ key: ORIGIN_HEADER, value: Buffer.from(event.header.server) }],
    });
  }
  const acknowledged = await producer.send(values.topic, records);
  await producer.flush();
  process.stdout.write(`produced ${acknowledged.length} page views to ${values.topic}, created ${new Date(span.from).toISOString()} – ${new Date(span.to).toISOString()}; PRODUCER audit counts published\n`);
} finally {
  await producer.close();
}
