/**
 * Which source topics the mirror copies: a whitelist and an optional blacklist, each a regular
 * expression that must match the whole topic name (as MirrorMaker's), and the audit topic
 * always, because the offline audit reconciles the producers' counts that travel in it.
 */

/** The topic every audit counter publishes to; mirrored whatever the lists say. */
export const AUDIT_TOPIC = '_audit';

export class TopicFilter {
  private readonly whitelist: RegExp;
  private readonly blacklist: RegExp | undefined;

  constructor(whitelist: string, blacklist?: string) {
    this.whitelist = new RegExp(`^(?:${whitelist})$`);
    this.blacklist = blacklist === undefined ? undefined : new RegExp(`^(?:${blacklist})$`);
  }

  matches(topic: string): boolean {
    if (topic === AUDIT_TOPIC) return true;
    return this.whitelist.test(topic) && !(this.blacklist?.test(topic) ?? false);
  }
}
