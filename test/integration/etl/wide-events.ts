/**
 * Wide events for the loader's memory test (issue #32): a 16-field Avro record of every kind of
 * field a real activity event carries (longs, ints, doubles, non-ASCII strings, an optional
 * string, an array, a map, a nested record, bytes, a timestamp-millis event time), about 450 bytes
 * encoded. Every event follows from its index alone, so a test can produce hundreds of thousands
 * of them a batch at a time without keeping any, and check what it reads back against the index.
 *
 * Event times are spread over `hours` whole hours from `firstHour` by a hash of the index, not in
 * index order: the records of any stretch of a partition fall in every hour, so a loader reading
 * a partition's range keeps all of its hour files open at once.
 */
import { HOUR_MS } from '../../../src/etl/layout.js';

export const WIDE_EVENT_SCHEMA = JSON.stringify({
  type: 'record',
  name: 'WideActivityEvent',
  namespace: 'io.tributary.test',
  doc: 'A wide activity event for the loader memory test: one field of each kind a real event carries.',
  fields: [
    { name: 'id', type: 'long', doc: 'The index the event was made from.' },
    { name: 'eventTime', type: { type: 'long', logicalType: 'timestamp-millis' }, doc: "The load's timeField." },
    { name: 'memberId', type: 'long' },
    { name: 'sessionId', type: 'string' },
    { name: 'pageKey', type: 'string' },
    { name: 'title', type: 'string' },
    { name: 'description', type: 'string' },
    { name: 'referrer', type: ['null', 'string'], default: null },
    { name: 'durationMs', type: 'int' },
    { name: 'scrollDepth', type: 'double' },
    { name: 'latitude', type: 'double' },
    { name: 'longitude', type: 'double' },
    { name: 'tags', type: { type: 'array', items: 'string' } },
    { name: 'attributes', type: { type: 'map', values: 'string' } },
    {
      name: 'device',
      type: {
        type: 'record',
        name: 'Device',
        fields: [
          { name: 'os', type: 'string' },
          { name: 'browser', type: 'string' },
          { name: 'screenWidth', type: 'int' },
          { name: 'screenHeight', type: 'int' },
        ],
      },
    },
    { name: 'payload', type: 'bytes' },
  ],
});

export interface WideEvent {
  readonly id: number;
  readonly eventTime: number;
  readonly memberId: number;
  readonly sessionId: string;
  readonly pageKey: string;
  readonly title: string;
  readonly description: string;
  readonly referrer: string | null;
  readonly durationMs: number;
  readonly scrollDepth: number;
  readonly latitude: number;
  readonly longitude: number;
  readonly tags: readonly string[];
  readonly attributes: Readonly<Record<string, string>>;
  readonly device: { readonly os: string; readonly browser: string; readonly screenWidth: number; readonly screenHeight: number };
  readonly payload: Buffer;
}

const CITIES = ['Zürich', 'São Paulo', 'Kraków', '東京', 'Москва', 'Reykjavík', 'İstanbul', 'Hà Nội', 'Αθήνα', 'القاهرة', 'Île-de-France', 'Malmö'] as const;
const WORDS = [
  'Stellenangebot',
  'für',
  'Ingénieur',
  'logiciel',
  'développeur',
  'データ',
  'エンジニア',
  'разработчик',
  'señor',
  'analista',
  'κύριος',
  'Straße',
  'naïve',
  'façade',
  'smörgåsbord',
  '🚀',
  'crème brûlée',
  'jalapeño',
] as const;
const PAGES = ['home', 'profile', 'job-view', 'search', 'feed', 'company', 'messaging', 'notifications'] as const;
const SYSTEMS = ['Linux', 'macOS', 'Windows', 'Android', 'iOS'] as const;
const BROWSERS = ['Firefox/128.0', 'Safari/605.1.15', 'Chrome/126.0', 'Edg/126.0'] as const;

/** A 32-bit mix of the index (an integer hash): fields vary with it without a random generator. */
function mix(index: number, salt: number): number {
  let h = Math.imul(index ^ salt, 0x9e37_79b1);
  h ^= h >>> 15;
  h = Math.imul(h, 0x85eb_ca77);
  h ^= h >>> 13;
  return h >>> 0;
}

function pick<T>(items: readonly T[], index: number, salt: number): T {
  return items[mix(index, salt) % items.length] as T;
}

/** The event time of event `index`: somewhere in the `hours` hours from `firstHour`, by a hash of the index. */
export function wideEventTime(index: number, firstHour: number, hours: number): number {
  return firstHour + (mix(index, 0x5eed) % (hours * HOUR_MS));
}

/** Event `index`; the same index always gives the same event. */
export function wideEvent(index: number, firstHour: number, hours: number): WideEvent {
  const words = (count: number, salt: number): string => Array.from({ length: count }, (_, n) => pick(WORDS, index, salt + n)).join(' ');
  const tagCount = 2 + (mix(index, 7) % 5);
  const payload = Buffer.alloc(24);
  for (let at = 0; at < payload.length; at += 4) payload.writeUInt32BE(mix(index, 100 + at), at);
  return {
    id: index,
    eventTime: wideEventTime(index, firstHour, hours),
    memberId: 1_000_000_000_000 + (mix(index, 1) % 5_000_000),
    sessionId: `${mix(index, 2).toString(16).padStart(8, '0')}-${mix(index, 3).toString(16).padStart(8, '0')}-${index.toString(16).padStart(8, '0')}`,
    pageKey: pick(PAGES, index, 4),
    title: `${pick(CITIES, index, 5)} — ${words(3, 10)} №${index}`,
    description: `${words(10 + (mix(index, 6) % 8), 20)} (${pick(CITIES, index, 8)}, ${pick(CITIES, index, 9)})`,
    referrer: mix(index, 11) % 10 < 3 ? null : `https://www.example.com/${pick(PAGES, index, 12)}/${mix(index, 13) % 100_000}?q=${encodeURIComponent(pick(WORDS, index, 14))}`,
    durationMs: mix(index, 15) % 600_000,
    scrollDepth: (mix(index, 16) % 10_001) / 10_000,
    latitude: ((mix(index, 17) % 180_000_000) - 90_000_000) / 1_000_000,
    longitude: ((mix(index, 18) % 360_000_000) - 180_000_000) / 1_000_000,
    tags: Array.from({ length: tagCount }, (_, n) => `${pick(WORDS, index, 30 + n)}-${n}`),
    attributes: {
      locale: pick(['de-CH', 'pt-BR', 'pl-PL', 'ja-JP', 'ru-RU', 'tr-TR'], index, 40),
      experiment: `arm-${mix(index, 41) % 3}`,
      campaign: `${pick(CITIES, index, 42)} ${mix(index, 43) % 1000}`,
      ...(mix(index, 44) % 2 === 0 ? { 'région': pick(CITIES, index, 45) } : {}),
    },
    device: { os: pick(SYSTEMS, index, 50), browser: `Mozilla/5.0 ${pick(BROWSERS, index, 51)}`, screenWidth: 320 + (mix(index, 52) % 3520), screenHeight: 480 + (mix(index, 53) % 1680) },
    payload,
  };
}

/**
 * A decoded value in one comparable form, whichever way a file format's reader gives it back:
 * longs as numbers (not bigint), timestamps as ms (not Date), bytes as hex, record and map keys
 * sorted.
 */
export function comparable(value: unknown): unknown {
  if (typeof value === 'bigint') return Number(value);
  if (value instanceof Date) return value.getTime();
  if (value instanceof Uint8Array) return Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('hex');
  if (Array.isArray(value)) return value.map(comparable);
  if (value instanceof Map) return comparable(Object.fromEntries(value as Map<string, unknown>));
  if (typeof value === 'object' && value !== null) {
    return Object.fromEntries(
      Object.entries(value)
        .sort(([a], [b]) => (a < b ? -1 : 1))
        .map(([key, field]) => [key, comparable(field)]),
    );
  }
  return value;
}
