/**
 * Crash safety: SIGKILL a broker while kcat produces with acks=-1. After a restart every
 * acknowledged message is present and readable at the offset it was acknowledged with, and the
 * broker's log says what recovery checked and cut.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { openRun } from '../../services/run-dir.js';
import { startBrokerProcess, type BrokerProcess } from '../../support/brokers.js';
import { kcat } from '../../support/kcat.js';
import { services } from '../services.js';

let broker: BrokerProcess | undefined;
afterAll(async () => {
  await broker?.stop().catch(() => undefined);
});

describe('kill -9 during acks=-1 produce', () => {
  it('keeps every acknowledged message', async () => {
    broker = await startBrokerProcess({ run: openRun(services().runDir), id: 7 });
    const created = await kcat(['-b', broker.bootstrap, '-P', '-t', 'crash', '-p', '0'], 'warm-up\n');
    expect(created.status, `${created.stderr}\n${readFileSync(broker.logFile, 'utf8')}`).toBe(0);

    // kcat reports each delivery (-vv) after the broker acknowledged it (acks=all → after fsync).
    const producer = spawn('kcat', ['-b', broker.bootstrap, '-P', '-t', 'crash', '-p', '0', '-vv', '-X', 'acks=all', '-X', 'message.timeout.ms=3000', '-X', 'linger.ms=1'], {
      stdio: ['pipe', 'ignore', 'pipe'],
    });
    const acknowledged: number[] = [];
    let stderr = '';
    producer.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      for (const match of chunk.toString().matchAll(/Message delivered to partition 0 \(offset (\d+)\)/g)) acknowledged.push(Number(match[1]));
    });
    let sent = 0;
    const feeder = setInterval(() => {
      if (producer.stdin.writable) {
        const lines = Array.from({ length: 200 }, () => `message-${(sent += 1)}\n`).join('');
        producer.stdin.write(lines);
      }
    }, 5);
    producer.stdin.on('error', () => {});
    await expect.poll(() => acknowledged.length, { timeout: 60_000, interval: 50 }).toBeGreaterThan(3_000);
    await broker.kill();
    clearInterval(feeder);
    producer.stdin.end();
    await new Promise((resolve) => producer.once('close', resolve));
    const acked = [...acknowledged];
    expect(acked.length, stderr.slice(-2000)).toBeGreaterThan(3_000);

    await broker.restart();
    const result = await kcat(['-b', broker.bootstrap, '-C', '-t', 'crash', '-p', '0', '-o', 'beginning', '-e', '-f', '%o %s\n']);
    expect(result.status, result.stderr).toBe(0);
    const stored = new Map(
      result.stdout
        .split('\n')
        .filter((line) => line !== '')
        .map((line) => {
          const [offset, value] = line.split(' ');
          return [Number(offset), value] as const;
        }),
    );
    // Offset 0 is the warm-up; message-N was sent N-th, and acknowledged at offset N.
    for (const offset of acked) expect(stored.get(offset), `acknowledged offset ${offset}`).toBe(`message-${offset}`);
    const log = readFileSync(broker.logFile, 'utf8');
    expect(log).toMatch(/"msg":"logs recovered after an unclean stop"/);
    expect(log).toMatch(/"msg":"recovered log; (every batch valid|truncated invalid bytes)"/);
  });
});
