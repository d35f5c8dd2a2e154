/** The addresses of the services the global setup started; a missing one fails the test. */
import { inject } from 'vitest';
import type { ServiceAddresses } from '../services/stack.js';

export function services(): ServiceAddresses {
  return inject('services');
}

export function zookeeperAddress(): NonNullable<ServiceAddresses['zookeeper']> {
  return required('zookeeper', services().zookeeper);
}

export function hdfsAddress(): NonNullable<ServiceAddresses['hdfs']> {
  return required('hdfs', services().hdfs);
}

export function redisAddress(): NonNullable<ServiceAddresses['redis']> {
  return required('redis', services().redis);
}

function required<T>(name: string, value: T | undefined): T {
  if (value === undefined) throw new Error(`the global setup did not start ${name}`);
  return value;
}
