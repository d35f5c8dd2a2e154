/**
 * The records of the loader benchmarks (`npm run bench:etl`, test/bench/iceberg-rows.ts): issue
 * #32's wide event, made from the record index and a seeded generator alone, so production can go
 * batch by batch and every run makes the same records.
 */
import { HOUR_MS } from '../../src/etl/layout.js';

/** Event hours start here: a fixed past hour, so the records are the same in every run. */
export const FIRST_HOUR = Date.UTC(2026, 0, 5, 0);

export const pick = <T>(items: readonly T[], random: () => number): T => items[Math.floor(random() * items.length)] as T;

/** The event time of record `index` of `total`: growing with the index over the hours, traffic rising from weight 1 to 2 across them. */
export function eventTime(index: number, total: number, hours: number): number {
  const quantile = (index + 0.5) / total;
  return FIRST_HOUR + Math.floor(hours * HOUR_MS * (Math.sqrt(1 + 3 * quantile) - 1));
}

export const PAGES = ['home', 'profile', 'job-view', 'search', 'feed', 'company'] as const;

/** Issue #32's trial shape: long ids, non-ASCII strings, an optional string, an array, a map, a timestamp-millis. */
export const WIDE_EVENT = JSON.stringify({
  type: 'record',
  name: 'WideEvent',
  namespace: 'io.tributary.bench',
  doc: 'The benchmark\'s 8-field record (issue #32): long ids, non-ASCII strings, an optional string, an array, a map, a timestamp-millis event time.',
  fields: [
    { name: 'eventId', type: 'long' },
    { name: 'memberId', type: 'long' },
    { name: 'eventTime', type: { type: 'long', logicalType: 'timestamp-millis' } },
    { name: 'title', type: 'string' },
    { name: 'location', type: 'string' },
    { name: 'referrer', type: ['null', 'string'], default: null },
    { name: 'tags', type: { type: 'array', items: 'string' } },
    { name: 'attributes', type: { type: 'map', values: 'string' } },
  ],
});

export interface WideEvent {
  readonly eventId: number;
  readonly memberId: number;
  readonly eventTime: number;
  readonly title: string;
  readonly location: string;
  readonly referrer: string | null;
  readonly tags: string[];
  readonly attributes: Record<string, string>;
}

const TITLES = [
  'Ingénieure logicielle', 'Développeur·se back-end', 'Datenanalyst:in (Köln)', 'Produktmanagerin', 'Инженер-программист', 'Аналитик данных',
  'مهندس برمجيات', 'ソフトウェアエンジニア', 'データサイエンティスト', '软件工程师', '产品经理', 'Diseñador de producto', 'Σύμβουλος πωλήσεων', 'Engenheira de dados',
] as const;
const LOCATIONS = ['São Paulo', 'Zürich', '東京', 'Москва', 'Kraków', 'Malmö', 'Reykjavík', 'القاهرة', 'İstanbul', 'Montréal', 'München', 'Łódź', '北京', 'Αθήνα'] as const;
const TAGS = ['remote', 'hybrid', 'full-time', 'contract', 'senior', 'junior', 'urgent', 'visa', 'équipe', 'Überstunden', 'リモート', 'удалённо'] as const;
const UTM_SOURCES = ['newsletter', 'search', 'partner', 'social', 'direct'] as const;
const LANGUAGES = ['fr-FR', 'de-DE', 'ja-JP', 'ru-RU', 'ar-EG', 'pt-BR', 'zh-CN', 'en-US'] as const;
const DEVICES = ['desktop', 'mobile', 'tablet'] as const;

/** Wide events from the index and the seeded generator alone, so production can go batch by batch. */
export function wideEvents(from: number, count: number, total: number, hours: number, random: () => number): WideEvent[] {
  return Array.from({ length: count }, (_, offset) => {
    const index = from + offset;
    const tags = Array.from({ length: Math.floor(random() * 4) }, () => pick(TAGS, random));
    const attributes: Record<string, string> = { lang: pick(LANGUAGES, random) };
    if (random() < 0.6) attributes['utm_source'] = pick(UTM_SOURCES, random);
    if (random() < 0.5) attributes['device'] = pick(DEVICES, random);
    if (random() < 0.2) attributes['ab_test'] = `exp-${Math.floor(random() * 40)}`;
    return {
      eventId: 4_000_000_000_000 + index * 7,
      memberId: 10_000_000_000 + Math.floor(random() * 50_000_000),
      eventTime: eventTime(index, total, hours),
      title: pick(TITLES, random),
      location: pick(LOCATIONS, random),
      referrer: random() < 0.4 ? `https://www.example.com/${pick(PAGES, random)}/${Math.floor(random() * 100_000)}` : null,
      tags,
      attributes,
    };
  });
}

