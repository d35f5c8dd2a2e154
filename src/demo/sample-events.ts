/**
 * The demo's sample traffic: PageViewEvents (schemas/PageViewEvent.avsc) from a few front-end
 * servers, spread over whole hours of event time in the past. Everything but the hours comes from
 * the event's index and a fixed seed, so two demos over the same hours produce the same events;
 * the test relies on that only through the event ids it reads back.
 */
import { createHash } from 'node:crypto';
import { HOUR_MS } from '../etl/layout.js';

export interface PageViewEvent {
  readonly header: { readonly eventId: string; readonly time: number; readonly server: string; readonly service: string };
  readonly memberId: number | null;
  readonly pageKey: string;
  readonly url: string;
  readonly referrer: string | null;
  readonly userAgent: string | null;
}

export interface EventHours {
  /** Start of the first hour, ms since the epoch (a whole UTC hour). */
  readonly from: number;
  /** End of the last hour, exclusive. */
  readonly to: number;
}

/** The origin servers; each event's header.server, and the origin header of its record. */
export const DEMO_SERVERS = ['web-1.demo', 'web-2.demo', 'web-3.demo'] as const;

const PAGES = ['home', 'profile', 'job-view', 'search', 'feed', 'company'] as const;
const AGENTS = ['Mozilla/5.0 (X11; Linux x86_64) Firefox/128.0', 'Mozilla/5.0 (Macintosh) Safari/605.1.15', 'Mozilla/5.0 (Windows NT 10.0) Chrome/126.0'] as const;

/**
 * `count` whole hours ending at the last hour boundary that is at least `closedAfterMs` in the
 * past: their audit windows are all closed, so the report can say OK rather than OPEN.
 */
export function pastHours(now: number, count: number, closedAfterMs: number): EventHours {
  const to = Math.floor((now - closedAfterMs) / HOUR_MS) * HOUR_MS;
  return { from: to - count * HOUR_MS, to };
}

/** `count` page views with creation times in [hours.from, hours.to), in creation-time order. */
export function samplePageViews(count: number, hours: EventHours): PageViewEvent[] {
  const random = mulberry32(0x7f1b_0010);
  const span = hours.to - hours.from;
  // Traffic grows over the span (weight 1 at its start, 2 at its end), so the hours differ.
  const times = Array.from({ length: count }, () => hours.from + Math.floor(span * (Math.sqrt(1 + 3 * random()) - 1)));
  times.sort((a, b) => a - b);
  return times.map((time, index) => {
    const page = pick(PAGES, random);
    const member = random() < 0.7 ? 1000 + Math.floor(random() * 5000) : null;
    return {
      header: { eventId: eventIdOf(index), time, server: pick(DEMO_SERVERS, random), service: 'frontend' },
      memberId: member,
      pageKey: page,
      url: urlOf(page, random),
      referrer: random() < 0.4 ? `https://www.example.com/${pick(PAGES, random)}` : null,
      userAgent: random() < 0.9 ? pick(AGENTS, random) : null,
    };
  });
}

/** A version-4-shaped UUID derived from the index, so ids are unique and repeatable. */
function eventIdOf(index: number): string {
  const hex = createHash('sha256').update(`tributary-demo-event-${index}`).digest('hex');
  const variant = ((parseInt(hex[16] ?? '0', 16) & 0x3) | 0x8).toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

function urlOf(page: (typeof PAGES)[number], random: () => number): string {
  const id = Math.floor(random() * 100_000);
  switch (page) {
    case 'home':
      return '/';
    case 'profile':
      return `/in/member-${id}`;
    case 'job-view':
      return `/jobs/view/${id}`;
    case 'search':
      return `/search/results/all/?keywords=${pick(['kafka', 'hadoop', 'avro', 'zookeeper'], random)}`;
    case 'feed':
      return '/feed/';
    case 'company':
      return `/company/${id}/`;
  }
}

function pick<T>(choices: readonly T[], random: () => number): T {
  return choices[Math.floor(random() * choices.length)] as T;
}

/** A small seeded PRNG (mulberry32): the same sequence on every run, unlike Math.random. */
function mulberry32(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}
