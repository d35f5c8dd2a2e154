/**
 * Starts the services the integration tests use — ZooKeeper, HDFS and Redis — in parallel in one
 * run folder, and describes where they listen. Used by the vitest global setup and by
 * `npm run services`.
 */
import { startHdfs } from './hdfs.js';
import { startRedis } from './redis.js';
import type { ServiceRun } from './run-dir.js';
import { startZooKeeper } from './zookeeper.js';

export const SERVICE_NAMES = ['zookeeper', 'hdfs', 'redis'] as const;
export type ServiceName = (typeof SERVICE_NAMES)[number];

/** Plain data (it crosses from the vitest main process to the test workers). */
export interface ServiceAddresses {
  readonly runDir: string;
  readonly zookeeper?: { readonly connectString: string };
  readonly hdfs?: { readonly nameNodeUri: string; readonly webHdfsUrl: string; readonly user: string };
  readonly redis?: { readonly host: string; readonly port: number; readonly url: string };
}

export interface ServiceStack {
  readonly addresses: ServiceAddresses;
  /** Seconds each service took from launch to ready. */
  readonly startSeconds: Readonly<Partial<Record<ServiceName, number>>>;
  stop(): Promise<void>;
}

export async function startStack(
  run: ServiceRun,
  names: readonly ServiceName[] = SERVICE_NAMES,
  log: (line: string) => void = () => {},
): Promise<ServiceStack> {
  const startSeconds: Partial<Record<ServiceName, number>> = {};
  const timed = async <T>(name: ServiceName, start: () => Promise<T>): Promise<T | undefined> => {
    if (!names.includes(name)) return undefined;
    const began = performance.now();
    const service = await start();
    startSeconds[name] = Number(((performance.now() - began) / 1000).toFixed(1));
    return service;
  };
  const results = await Promise.allSettled([
    timed('zookeeper', () => startZooKeeper(run)),
    timed('hdfs', () => startHdfs(run, log)),
    timed('redis', () => startRedis(run)),
  ]);
  const [zookeeperResult, hdfsResult, redisResult] = results;
  const started = results.flatMap((result) =>
    result.status === 'fulfilled' && result.value !== undefined ? [result.value] : [],
  );
  const failures = results.flatMap((result) => (result.status === 'rejected' ? [result.reason as unknown] : []));
  if (failures.length > 0) {
    await Promise.all(started.map((service) => service.stop()));
    throw new AggregateError(failures, `could not start the test services: ${failures.map(String).join('\n\n')}`);
  }
  const zookeeper = settledValue(zookeeperResult);
  const hdfs = settledValue(hdfsResult);
  const redis = settledValue(redisResult);

  const addresses: ServiceAddresses = {
    runDir: run.dir,
    ...(zookeeper && { zookeeper: { connectString: zookeeper.connectString } }),
    ...(hdfs && { hdfs: { nameNodeUri: hdfs.nameNodeUri, webHdfsUrl: hdfs.webHdfsUrl, user: hdfs.user } }),
    ...(redis && { redis: { host: redis.host, port: redis.port, url: redis.url } }),
  };
  return {
    addresses,
    startSeconds,
    stop: async () => {
      await Promise.all(started.map((service) => service.stop()));
    },
  };
}

function settledValue<T>(result: PromiseSettledResult<T | undefined> | undefined): T | undefined {
  return result?.status === 'fulfilled' ? result.value : undefined;
}
