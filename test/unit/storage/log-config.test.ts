/** The topic config catalog: each entry's broker synonym and field, and what values it accepts. */
import { describe, expect, it } from 'vitest';
import { brokerConfigSchema, defaultLogConfig, parseBrokerConfig } from '../../../src/broker/config.js';
import {
  DEFAULT_LOG_CONFIG,
  TOPIC_CONFIGS,
  formatTopicConfigValue,
  logConfigFromTopicConfigs,
  topicConfigDefinition,
  topicConfigProblem,
} from '../../../src/storage/log-config.js';

describe('the topic config catalog', () => {
  it('names each config once, each on its own field', () => {
    expect(new Set(TOPIC_CONFIGS.map((definition) => definition.name)).size).toBe(TOPIC_CONFIGS.length);
    expect(new Set(TOPIC_CONFIGS.map((definition) => definition.field)).size).toBe(TOPIC_CONFIGS.length);
    expect(TOPIC_CONFIGS.map((definition) => definition.field).sort()).toEqual(Object.keys(DEFAULT_LOG_CONFIG).sort());
  });

  // A synonym is right when setting that broker setting changes this topic config's default.
  for (const definition of TOPIC_CONFIGS) {
    it(`${definition.name} falls back to broker setting ${definition.brokerSynonym}`, () => {
      expect(Object.keys(brokerConfigSchema.shape)).toContain(definition.brokerSynonym);
      const sample: Record<string, string> = {
        BOOLEAN: 'true',
        STRING: 'LogAppendTime',
        INT: '12345',
        LONG: '12345',
        DOUBLE: '0.25',
        LIST: 'compact',
      };
      const value = sample[definition.type] ?? '';
      const config = defaultLogConfig(parseBrokerConfig({ [definition.brokerSynonym]: value }, 'test'));
      expect(formatTopicConfigValue(definition, config)).toBe(value);
      expect(formatTopicConfigValue(definition, DEFAULT_LOG_CONFIG)).not.toBe(value);
    });
  }

  it("has Kafka's defaults for the compaction settings", () => {
    expect(DEFAULT_LOG_CONFIG).toMatchObject({ cleanupPolicy: 'delete', minCleanableDirtyRatio: 0.5, minCompactionLagMs: 0, maxCompactionLagMs: Infinity, deleteRetentionMs: 86_400_000 });
    const definition = topicConfigDefinition('max.compaction.lag.ms');
    expect(definition === undefined ? undefined : formatTopicConfigValue(definition, DEFAULT_LOG_CONFIG)).toBe('9223372036854775807');
  });
});

describe('topic config values', () => {
  const accepted = (name: string, value: string): boolean => topicConfigProblem(name, value) === undefined;

  it('take plain decimal integers only, within each bound', () => {
    expect(['14', '2147483647', ' 1048576 '].map((v) => accepted('segment.bytes', v))).toEqual([true, true, true]);
    expect(['13', '2147483648', '', '1e3', '0x10', '1.5', 'abc'].map((v) => accepted('segment.bytes', v))).toEqual([false, false, false, false, false, false, false]);
    expect(['-1', '0', '86400000'].map((v) => accepted('retention.ms', v))).toEqual([true, true, true]);
    expect(accepted('retention.ms', '-2')).toBe(false);
    expect([accepted('flush.messages', '1'), accepted('flush.messages', '0')]).toEqual([true, false]);
    expect([accepted('segment.ms', '1'), accepted('segment.ms', '0')]).toEqual([true, false]);
  });

  it('read Long.MAX_VALUE as "no bound" for the timestamp limits, and refuse negatives', () => {
    expect(logConfigFromTopicConfigs({ 'message.timestamp.after.max.ms': '9223372036854775807' }).timestampAfterMaxMs).toBe(Infinity);
    const definition = topicConfigDefinition('message.timestamp.before.max.ms');
    expect(definition === undefined ? undefined : formatTopicConfigValue(definition, DEFAULT_LOG_CONFIG)).toBe('9223372036854775807');
    expect(accepted('message.timestamp.before.max.ms', '-1')).toBe(false);
  });

  it('take the enumerated strings, booleans and the cleanup policies in any order', () => {
    expect(['CreateTime', 'LogAppendTime', 'createtime'].map((v) => accepted('message.timestamp.type', v))).toEqual([true, true, false]);
    expect(['true', 'false', 'yes'].map((v) => accepted('visible.on.append', v))).toEqual([true, true, false]);
    expect(['delete', 'delete, delete', 'compact', 'delete,compact', 'compact, delete', '', 'compacted', 'delete,none'].map((v) => accepted('cleanup.policy', v))).toEqual([true, true, true, true, true, false, false, false]);
    expect(logConfigFromTopicConfigs({ 'cleanup.policy': 'delete, compact' }).cleanupPolicy).toBe('compact,delete');
  });

  it('take ratios from 0 to 1, and refuse a max compaction lag below the min', () => {
    expect(['0', '0.5', '1', '1.0', '.25', '1.5', '-0.1', 'half', ''].map((v) => accepted('min.cleanable.dirty.ratio', v))).toEqual([true, true, true, true, true, false, false, false, false]);
    expect(['1', '9223372036854775807', '0'].map((v) => accepted('max.compaction.lag.ms', v))).toEqual([true, true, false]);
    expect(() => logConfigFromTopicConfigs({ 'min.compaction.lag.ms': '5000', 'max.compaction.lag.ms': '1000' })).toThrow('max.compaction.lag.ms (1000) must not be below min.compaction.lag.ms (5000)');
  });

  it('name the config and what it allows, and list the known names for an unknown one', () => {
    expect(topicConfigProblem('retention.bytes', 'lots')?.message).toBe('invalid value "lots" for topic config retention.bytes: expected an integer of at least -1 (bytes; -1 = no size limit)');
    expect(topicConfigProblem('retention.mss', '1')?.message).toMatch(/^unknown topic config retention\.mss; the topic configs Tributary honours are cleanup\.policy, delete\.retention\.ms, flush\.messages, .*, visible\.on\.append$/);
  });

  it('are all reported at once, as CONFIG_INVALID, over the base config', () => {
    expect(() => logConfigFromTopicConfigs({ 'segment.bytes': '1', 'nope': 'x', 'retention.ms': '5' }, DEFAULT_LOG_CONFIG, 'configs of topic t')).toThrow(
      expect.objectContaining({
        code: 'CONFIG_INVALID',
        message: expect.stringMatching(/segment\.bytes.*; unknown topic config nope.* \(in configs of topic t\)$/) as unknown,
      }),
    );
    const base = { ...DEFAULT_LOG_CONFIG, retentionMs: 1000 };
    expect(logConfigFromTopicConfigs({ 'segment.bytes': '2048' }, base)).toEqual({ ...base, segmentBytes: 2048 });
  });
});
