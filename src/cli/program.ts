/**
 * The `tributary` command: one entry point whose subcommands are the composition roots of the
 * services. Commands whose capability has not landed yet are labelled stubs (exit status 2).
 */
import { Command } from 'commander';
import packageJson from '../../package.json' with { type: 'json' };
import { notImplemented, type CommandIo } from './not-implemented.js';

export function buildProgram(io: CommandIo): Command {
  const program = new Command('tributary')
    .description(
      'The distributed log of the 2011 LinkedIn Kafka paper and its pipeline: Kafka-protocol brokers, ' +
        'ZooKeeper consumer groups, an offline mirror, an Avro schema registry, a record-count audit ' +
        'and exactly-once hourly loads into HDFS.',
    )
    .version(packageJson.version)
    .showHelpAfterError()
    .configureOutput({ writeOut: io.writeOut, writeErr: io.writeErr });

  const stub = (parent: Command, name: string, description: string, issue: number): Command =>
    parent
      .command(name)
      .description(`${description} (not implemented yet, #${issue})`)
      .allowUnknownOption()
      .allowExcessArguments()
      .action(() => notImplemented(io, `${parent === program ? '' : `${parent.name()} `}${name}`, issue));

  const broker = program.command('broker').description('run a broker (Kafka wire protocol over segment files)');
  stub(broker, 'start', 'start a broker, standalone or in a ZooKeeper cluster', 4);

  const topics = program.command('topics').description('create, delete, list and describe topics');
  stub(topics, 'create', 'create a topic', 4);
  stub(topics, 'delete', 'delete a topic', 4);
  stub(topics, 'list', 'list topics', 4);
  stub(topics, 'describe', 'show partitions, owners and offsets of a topic', 4);

  const registry = program.command('registry').description('the Avro schema registry (Confluent-compatible REST)');
  stub(registry, 'start', 'start a schema registry instance', 7);

  const mirror = program.command('mirror').description('the offline mirror: pull from online clusters');
  stub(mirror, 'start', 'start a mirror process', 8);

  const audit = program.command('audit').description('record counts per time window at every tier');
  stub(audit, 'report', 'reconcile the counts of each tier and report gaps', 8);

  const etl = program.command('etl').description('load topics into HDFS, exactly once');
  stub(etl, 'plan', 'print the offset ranges the next run of a load would read', 9);
  stub(etl, 'run', 'run a load once: plan, extract, stage, commit', 9);
  stub(etl, 'replay', 'rebuild the hours of a time window from their recorded offset ranges', 10);
  stub(etl, 'rollback', 'restore the previous version of a replayed hour', 10);

  stub(program, 'worker', 'process load tasks from the BullMQ queues', 10);
  stub(program, 'scheduler', 'keep the hourly job schedulers in step with the load files', 10);
  stub(program, 'demo', 'run the whole pipeline on one machine with embedded defaults', 10);

  return program;
}
