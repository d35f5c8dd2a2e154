import { describe, expect, it } from 'vitest';
import { TributaryError } from '../../../src/common/errors.js';
import {
  brokerIdsPath,
  brokerPath,
  consumerIdsPath,
  consumerPath,
  etlLockPath,
  offsetPath,
  offsetsPath,
  ownerPath,
  ownersPath,
  schemasPath,
  topicConfigPath,
  topicConfigsPath,
  topicPath,
  topicsPath,
} from '../../../src/coordination/paths.js';
import { validatePath } from '../../../src/coordination/store.js';

describe('coordination paths', () => {
  it('follows the layout of ARCHITECTURE.md', () => {
    expect(brokerIdsPath()).toBe('/brokers/ids');
    expect(brokerPath(3)).toBe('/brokers/ids/3');
    expect(topicsPath()).toBe('/brokers/topics');
    expect(topicPath('page-views')).toBe('/brokers/topics/page-views');
    expect(topicConfigsPath()).toBe('/config/topics');
    expect(topicConfigPath('page-views')).toBe('/config/topics/page-views');
    expect(consumerIdsPath('etl')).toBe('/consumers/etl/ids');
    expect(consumerPath('etl', 'etl_host-1700000000000-ab12cd34')).toBe('/consumers/etl/ids/etl_host-1700000000000-ab12cd34');
    expect(ownersPath('etl')).toBe('/consumers/etl/owners');
    expect(ownersPath('etl', 'clicks')).toBe('/consumers/etl/owners/clicks');
    expect(ownerPath('etl', 'clicks', 0)).toBe('/consumers/etl/owners/clicks/0');
    expect(offsetsPath('etl', 'clicks')).toBe('/consumers/etl/offsets/clicks');
    expect(offsetPath('etl', 'clicks', 12)).toBe('/consumers/etl/offsets/clicks/12');
    expect(schemasPath()).toBe('/schemas');
    expect(etlLockPath('hourly')).toBe('/etl/locks/hourly');
  });

  it('produces paths the store accepts', () => {
    for (const path of [brokerPath(0), topicPath('a.b_c-d'), ownerPath('g', 't', 7), etlLockPath('load')]) {
      expect(() => validatePath(path)).not.toThrow();
    }
  });

  it.each([
    ['a slash', () => topicPath('a/b')],
    ['an empty name', () => consumerPath('group', '')],
    ['a relative name', () => topicConfigPath('..')],
    ['a control character', () => etlLockPath('load\n')],
    ['a slash in a group', () => offsetPath('g/x', 't', 0)],
    ['a negative partition', () => ownerPath('g', 't', -1)],
    ['a fractional broker id', () => brokerPath(1.5)],
  ])('refuses %s with INVALID_PATH', (_name, build) => {
    expect(build).toThrow(TributaryError);
    try {
      build();
    } catch (error) {
      expect(error).toMatchObject({ code: 'INVALID_PATH', retriable: false });
    }
  });
});
