/** `tributary groups`, parsed in this process: its help says how to choose, and where to connect is checked first. */
import { CommanderError, type Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { buildProgram } from '../../../src/cli/program.js';

async function run(...args: string[]): Promise<{ out: string; err: string; error: unknown }> {
  let out = '';
  let err = '';
  const program = buildProgram({ writeOut: (text) => void (out += text), writeErr: (text) => void (err += text) });
  // Subcommands made before exitOverride() would still exit the process: override each.
  const override = (command: Command): void => {
    command.exitOverride();
    for (const sub of command.commands) override(sub);
  };
  override(program);
  let error: unknown;
  try {
    await program.parseAsync(args, { from: 'user' });
  } catch (caught) {
    error = caught;
  }
  return { out, err, error };
}

describe('tributary groups', () => {
  it('explains both kinds of group and how to reach them, in the help of the command and of each subcommand', async () => {
    for (const args of [['groups', '--help'], ...['list', 'describe', 'reset-offsets', 'delete'].map((command) => ['groups', command, '--help'])]) {
      const { out, error } = await run(...args);
      expect(error).toBeInstanceOf(CommanderError);
      expect(out).toContain('A group id is one kind or the\nother');
      expect(out).toMatch(/ZooKeeper groups {3}the paper's groups: Tributary's own group consumer/);
      expect(out).toContain('Algorithm 1');
      expect(out).toMatch(/Cluster mode\s+only/);
      expect(out).toMatch(/broker groups {6}the groups of standard Kafka clients given a group\.id: kafkajs,\s+librdkafka \(kcat -G\), the Java consumer\. Standalone or cluster\./);
      expect(out).toContain('kafka-consumer-groups.sh works for them too');
      expect(out).toContain('--zookeeper HOST:PORT[/chroot]');
      expect(out).toContain('--bootstrap-server HOST:PORT');
      expect(out).toMatch(/only way in standalone mode/);
    }
    const { out } = await run('groups', '--help');
    for (const command of ['list', 'describe', 'reset-offsets', 'delete']) expect(out).toMatch(new RegExp(`^ {2}${command} \\[options\\]`, 'm'));
  });

  it('takes exactly one of --zookeeper and --bootstrap-server', async () => {
    for (const args of [
      ['groups', 'list'],
      ['groups', 'describe', '--group', 'g', '--zookeeper', 'localhost:2181', '--bootstrap-server', 'localhost:9092'],
      ['groups', 'delete', '--group', 'g'],
      ['groups', 'reset-offsets', '--group', 'g', '--topic', 't', '--to-earliest'],
    ]) {
      const { error } = await run(...args);
      expect(error).toMatchObject({ code: 'CONFIG_INVALID', message: expect.stringContaining('give exactly one') as unknown });
    }
  });

  it('checks the reset target before connecting anywhere', async () => {
    const { error } = await run('groups', 'reset-offsets', '--bootstrap-server', '127.0.0.1:1', '--group', 'g', '--topic', 't', '--to-earliest', '--to-latest');
    expect(error).toMatchObject({ code: 'CONFIG_INVALID', message: 'give exactly one of --to-earliest, --to-latest, --to-offset N, --to-datetime ISO, --shift-by N' });
  });
});
