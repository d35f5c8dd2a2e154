import { describe, expect, it } from 'vitest';
import { TributaryError } from '../../../src/common/errors.js';
import {
  brokerIdsPath,
  brokerPath,
  consumerIdsPath,
  consumerPath,
  controllerEpochPath,
  controllerPath,
  etlLockPath,
  offsetPath,
  offsetsPath,
  ownerPath,
  ownersPath,
  partitionPath,
  partitionStatePath,
  schemasPath,
  topicConfigPath,
  topicConfigsPath,
  topicPartitionsPath,
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
    expect(controllerPath()).toBe('/controller');
    expect(controllerEpochPath()).toBe('/controller_epoch');
    expect(topicPartitionsPath('page-views')).toBe('/brokers/topics/page-views/partitions');
    expect(partitionPath('page-views', 0)).toBe('/brokers/topics/page-views/partitions/0');
    expect(partitionStatePath('page-views', 11)).toBe('/brokers/topics/page-views/partitions/11/state');
  });

  it('produces paths the store accepts', () => {
    for (const path of [brokerPath(0), topicPath('a.b_c-d'), ownerPath('g', 't', 7), etlLockPath('load'), controllerPath(), controllerEpochPath(), partitionStatePath('a.b_c-d', 3)]) {
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
    ['a slash in a partitioned topic', () => topicPartitionsPath('a/b')],
    ['a relative topic in a partition path', () => partitionPath('..', 0)],
    ['a negative partition state', () => partitionStatePath('t', -1)],
    ['a fractional partition state', () => partitionStatePath('t', 0.5)],
    ['a NaN partition', () => partitionPath('t', Number.NaN)],
  ])('refuses %s with INVALID_PATH', (_name, build) => {
    expect(build).toThrow(TributaryError);
    try {
      build();
    } catch (error) {
      expect(error).toMatchObject({ code: 'INVALID_PATH', retriable: false });
    }
  });
});
