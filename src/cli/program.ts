/**
 * The `tributary` command: one entry point whose subcommands are the composition roots of the
 * services. Each command's module (and so the broker, BullMQ, fastify, the loader, …) is imported
 * only when that command runs, so `--help` and every command pay at start-up for their own code
 * only; what the tree needs while it is built (help texts, defaults) is in command-constants.ts.
 */
import { Command, Option } from 'commander';
import packageJson from '../../package.json' with { type: 'json' };
import type { AclsOptions } from './commands/acls.js';
import type { AuditReportOptions } from './commands/audit.js';
import type { BrokerStartOptions } from './commands/broker.js';
import type { ConsumeOptions } from './commands/consume.js';
import type { DashboardCommandOptions } from './commands/dashboard.js';
import type { DemoCommandOptions } from './commands/demo.js';
import type { EtlDdlOptions, EtlPlanOptions, EtlReplayOptions, EtlRollbackOptions, EtlRunOptions, EtlStatusOptions } from './commands/etl.js';
import type { EtlCompactOptions, EtlExpireOptions, EtlOrphansOptions } from './commands/etl-tables.js';
import type { GroupsConnection, ResetOptions } from './commands/groups.js';
import type { MirrorStartOptions } from './commands/mirror.js';
import type { ProduceOptions } from './commands/produce.js';
import type { RegistryStartOptions } from './commands/registry.js';
import type { RegistryUserLineOptions } from './commands/registry-user-line.js';
import type { SchedulerCommandOptions } from './commands/scheduler.js';
import type { SchemasCheckOptions, SchemasConfigOptions, SchemasGetOptions, SchemasListOptions, SchemasRegisterOptions } from './commands/schemas.js';
import type { AlterTopicOptions, DeleteRecordsOptions } from './commands/topics.js';
import type { UsersAddOptions, UsersConnection, UsersRemoveOptions } from './commands/users.js';
import type { WorkerCommandOptions } from './commands/worker.js';
import { COMMAND_CONFIG_HELP, DEFAULT_DEMO_EVENTS, DEFAULT_PASSWORD_ENV, GROUPS_HELP, USERS_HELP } from './command-constants.js';
import type { CommandIo } from './not-implemented.js';

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

/** `collect` for a repeatable option whose absence means something (no default list). */
function collectMaybe(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), value];
}

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

  const broker = program.command('broker').description('run a broker (Kafka wire protocol over segment files)');
  broker
    .command('start')
    .description('start a broker in the foreground, standalone or in a ZooKeeper cluster; SIGTERM stops it cleanly')
    .requiredOption('--id <n>', 'broker id, unique in the cluster')
    .option('--listen <host:port>', 'address of one PLAINTEXT listener for Kafka clients (required unless the config sets listeners=…)')
    .requiredOption('--data-dir <dir>', 'folder holding the partition logs')
    .option('--zookeeper <connect>', 'HOST:PORT[,HOST:PORT…][/chroot]; without it the broker runs standalone')
    .option('--config <file>', 'broker settings as key=value lines (Kafka names, e.g. log.retention.ms)')
    .option('--set <key=value>', 'one broker setting; repeatable', collect, [])
    .option('--metrics <host:port>', 'serve Prometheus metrics at http://HOST:PORT/metrics')
    .option('--advertised-host <host>', 'host name clients are told to connect to (default: the listen host)')
    .option('--log-level <level>', 'fatal, error, warn, info, debug or trace', 'info')
    .option('--mirror-config <file>', 'also run the offline mirror in this broker, into this broker\'s cluster (YAML or JSON: sources, whitelist, group, …)')
    .action(async (options: BrokerStartOptions) => (await import('./commands/broker.js')).startBroker(options));

  const topics = program.command('topics').description('create, delete, list and describe topics, and delete their oldest records');
  topics
    .command('create')
    .description('create a topic')
    .requiredOption('--bootstrap-server <host:port>', 'any broker of the cluster')
    .option('--command-config <file>', COMMAND_CONFIG_HELP)
    .requiredOption('--topic <name>', 'topic name')
    .requiredOption('--partitions <n>', 'number of partitions', (value) => Number(value))
    .option('--replication-factor <n>', "copies of each partition, on different brokers (default: the brokers' default.replication.factor)", (value) => Number(value))
    .option('--config <key=value>', 'a topic setting (e.g. retention.ms=3600000, min.insync.replicas=2); repeatable', collect, [])
    .action(async (options: { bootstrapServer: string; topic: string; partitions: number; replicationFactor?: number; config: string[] }) => (await import('./commands/topics.js')).createTopic(io, options));
  topics
    .command('list')
    .description('list topics')
    .requiredOption('--bootstrap-server <host:port>', 'any broker of the cluster')
    .option('--command-config <file>', COMMAND_CONFIG_HELP)
    .action(async (options: { bootstrapServer: string }) => (await import('./commands/topics.js')).listTopics(io, options));
  topics
    .command('describe')
    .description('show each partition\'s leader, leader epoch, replicas, in-sync replicas and log start/end offsets, and the topic\'s settings')
    .requiredOption('--bootstrap-server <host:port>', 'any broker of the cluster')
    .option('--command-config <file>', COMMAND_CONFIG_HELP)
    .requiredOption('--topic <name>', 'topic name')
    .action(async (options: { bootstrapServer: string; topic: string }) => (await import('./commands/topics.js')).describeTopic(io, options));
  topics
    .command('alter')
    .description('grow a topic to more partitions (new ones get the topic\'s replication factor, spread over the live brokers) and/or change its settings, on every broker without a restart')
    .requiredOption('--bootstrap-server <host:port>', 'any broker of the cluster')
    .option('--command-config <file>', COMMAND_CONFIG_HELP)
    .requiredOption('--topic <name>', 'topic name')
    .option('--partitions <n>', 'the new number of partitions', (value) => Number(value))
    .option('--config <key=value>', 'set a topic setting (e.g. retention.ms=3600000); repeatable', collect, [])
    .option('--delete-config <key>', 'remove a topic setting (back to the broker default); repeatable', collect, [])
    .action(async (options: AlterTopicOptions) => (await import('./commands/topics.js')).alterTopic(io, options));
  topics
    .command('delete')
    .description('delete a topic and its data')
    .requiredOption('--bootstrap-server <host:port>', 'any broker of the cluster')
    .option('--command-config <file>', COMMAND_CONFIG_HELP)
    .requiredOption('--topic <name>', 'topic name')
    .action(async (options: { bootstrapServer: string; topic: string }) => (await import('./commands/topics.js')).deleteTopic(io, options));
  topics
    .command('delete-records')
    .description("delete the records below an offset (kafka-delete-records): each partition's log start moves there on every live replica, and whole segments below it are removed")
    .requiredOption('--bootstrap-server <host:port>', 'any broker of the cluster')
    .option('--command-config <file>', COMMAND_CONFIG_HELP)
    .option('--topic <name>', 'topic name')
    .option('--partition <n>', 'the partition (default: every partition of the topic)', (value) => Number(value))
    .option('--offset <offset>', 'records below this offset are deleted; -1 = the high watermark (everything readable now)')
    .option('--offset-json-file <file>', 'instead of --topic/--partition/--offset, kafka-delete-records\' JSON: {"partitions":[{"topic":"t","partition":0,"offset":5}],"version":1}')
    .option('--timeout-ms <ms>', 'how long the brokers may wait for every replica to delete too', (value) => Number(value), 30_000)
    .action(async (options: DeleteRecordsOptions) => (await import('./commands/topics.js')).deleteRecordsOfTopic(io, options));

  program
    .command('produce')
    .description('send lines of standard input to a topic, one record each')
    .requiredOption('--bootstrap-server <host:port>', 'any broker of the cluster')
    .option('--command-config <file>', COMMAND_CONFIG_HELP)
    .requiredOption('--topic <name>', 'topic name')
    .option('--key-separator <text>', 'split each line into key and value at the first occurrence')
    .option('--acks <n>', '-1 (all, fsynced), 1 or 0', '-1')
    .option('--compression <codec>', 'none, gzip, snappy, lz4 or zstd', 'none')
    .action(async (options: ProduceOptions) => (await import('./commands/produce.js')).produce(io, options, process.stdin));
  program
    .command('consume')
    .description('print the records of a topic, one per line')
    .requiredOption('--bootstrap-server <host:port>', 'any broker of the cluster')
    .option('--command-config <file>', COMMAND_CONFIG_HELP)
    .requiredOption('--topic <name>', 'topic name')
    .option('--group <group>', 'consume as a member of a ZooKeeper consumer group (with --zookeeper)')
    .option('--zookeeper <connect>', 'the ZooKeeper of the group')
    .option('--from-beginning', 'start at the first retained record instead of the end')
    .option('--partition <n>', 'read only this partition')
    .option('--offset <n>', 'start at this offset (earliest, latest or a number; needs --partition)')
    .option('--max-messages <n>', 'stop after this many records')
    .option('--print-key', 'print key<separator>value')
    .option('--key-separator <text>', 'separator for --print-key', '\t')
    .action(async (options: ConsumeOptions) => {
      const stop = new AbortController();
      process.once('SIGINT', () => stop.abort());
      process.once('SIGTERM', () => stop.abort());
      await (await import('./commands/consume.js')).consume(io, options, stop.signal);
    });

  const groups = program
    .command('groups')
    .description('consumer groups of both kinds (ZooKeeper groups and broker-coordinated groups): list, describe, reset offsets, delete')
    .addHelpText('after', GROUPS_HELP);
  const reach = (command: Command): Command =>
    command
      .option('--zookeeper <connect>', 'HOST:PORT[/chroot] of a cluster: reads the registry (groups of both kinds)')
      .option('--bootstrap-server <host:port>', 'any broker: speaks the Kafka protocol (broker groups; the only way for a standalone broker)')
      .option('--command-config <file>', COMMAND_CONFIG_HELP)
      .addHelpText('after', GROUPS_HELP);
  reach(groups.command('list'))
    .description('list the groups with their kind (zookeeper, broker) and state; with --bootstrap-server, the broker groups only')
    .action(async (options: GroupsConnection) => (await import('./commands/groups.js')).listGroups(io, options));
  reach(groups.command('describe'))
    .description(
      'a broker group: state, protocol, members (client, host, assigned partitions); a ZooKeeper group: live members; ' +
        'then per partition the committed offset, log end, lag and owner',
    )
    .requiredOption('--group <group>', 'group id')
    .action(async (options: GroupsConnection & { group: string }) => (await import('./commands/groups.js')).describeGroup(io, options));
  reach(groups.command('reset-offsets'))
    .description(
      "set a group's offsets for a topic: a ZooKeeper group only with no live member, a broker group only while Empty " +
        '(written through its coordinator, as kafka-consumer-groups.sh does)',
    )
    .requiredOption('--group <group>', 'group id')
    .requiredOption('--topic <name>', 'topic name')
    .option('--to-earliest', 'the first retained offset')
    .option('--to-latest', 'the end of each partition')
    .option('--to-offset <n>', 'this offset in every partition')
    .option('--to-datetime <iso>', 'the first record at or after this time')
    .option('--shift-by <n>', 'move the committed offsets by n (negative rewinds)')
    .action(async (options: ResetOptions) => (await import('./commands/groups.js')).resetOffsets(io, options));
  reach(groups.command('delete'))
    .description('delete a group and its committed offsets, so its id can be reused; only with no live member')
    .requiredOption('--group <group>', 'group id')
    .action(async (options: GroupsConnection & { group: string }) => (await import('./commands/groups.js')).deleteGroup(io, options));

  const users = program.command('users').description('SASL/SCRAM users of a cluster: add, remove, list (stored keys only, never passwords)').addHelpText('after', USERS_HELP);
  const store = (command: Command): Command =>
    command
      .option('--zookeeper <connect>', "HOST:PORT[/chroot] of the cluster's ZooKeeper")
      .option('--data-dir <dir>', "a stopped standalone broker's data dir")
      .addHelpText('after', USERS_HELP);
  store(users.command('add <name>'))
    .description('add a user, or set a new password for one, with a credential per --mechanism')
    .option('--mechanism <mechanism>', 'SCRAM-SHA-512 or SCRAM-SHA-256 (required); repeatable, each gets the same password', (value: string, previous?: string[]) => [...(previous ?? []), value])
    .option('--iterations <n>', 'PBKDF2 iterations, 4096 to 16384 (default 4096)')
    .option('--password-file <file>', 'read the password from this file')
    .option('--password-stdin', 'read the password from standard input')
    .addOption(new Option('--password <password>').hideHelp())
    .action(async (name: string, options: UsersAddOptions) => (await import('./commands/users.js')).addUser(io, name, options, { stdin: process.stdin, env: process.env }));
  store(users.command('remove <name>'))
    .description("remove a user's credentials: every mechanism, or the one --mechanism names")
    .option('--mechanism <mechanism>', 'SCRAM-SHA-512 or SCRAM-SHA-256: remove only this credential')
    .action(async (name: string, options: UsersRemoveOptions) => (await import('./commands/users.js')).removeUserCommand(io, name, options));
  store(users.command('list'))
    .description('list the users with their mechanisms and iteration counts (no keys)')
    .action(async (options: UsersConnection) => (await import('./commands/users.js')).listUsersCommand(io, options));
  const acls = program
    .command('acls')
    .description("the ACLs brokers with authorizer=acl check (Kafka's model and ZooKeeper layout; kafka-acls.sh's flags): add, remove, list");
  const aclFlags = (command: Command): Command =>
    command
      .requiredOption('--zookeeper <connect>', 'HOST:PORT[/chroot] of the cluster')
      .option('--topic <name>', 'a topic (repeatable; with --resource-pattern-type prefixed, a name prefix)', collect, [])
      .option('--group <name>', 'a consumer group (repeatable)', collect, [])
      .option('--cluster', 'the cluster resource (kafka-cluster)')
      .option('--allow-principal <principal>', 'User:<name>, or User:* for everyone (repeatable)', collect, [])
      .option('--deny-principal <principal>', 'User:<name>, or User:* (repeatable)', collect, [])
      .option('--allow-host <host>', 'client IP the allow entries apply to (default *; repeatable)', collectMaybe)
      .option('--deny-host <host>', 'client IP the deny entries apply to (default *; repeatable)', collectMaybe)
      .option('--operation <operation>', 'Read, Write, Create, Delete, Alter, Describe, ClusterAction, DescribeConfigs, AlterConfigs, IdempotentWrite or All (repeatable)', collect, [])
      .option('--resource-pattern-type <type>', 'literal or prefixed (remove and list also take any and match)', 'literal');
  aclFlags(acls.command('add'))
    .description('add ACLs: every named principal × host × operation on every named resource (operation All when none is named)')
    .action(async (options: AclsOptions) => (await import('./commands/acls.js')).aclsAdd(io, options));
  aclFlags(acls.command('remove'))
    .description('remove the ACLs matching the flags (flags left out match anything)')
    .action(async (options: AclsOptions) => (await import('./commands/acls.js')).aclsRemove(io, options));
  aclFlags(acls.command('list'))
    .description('list ACLs, all or those matching the flags')
    .option('--principal <principal>', 'only the ACLs of this principal (repeatable)', collect, [])
    .action(async (options: AclsOptions) => (await import('./commands/acls.js')).aclsList(io, options));

  const registry = program.command('registry').description('the Avro schema registry (Confluent-compatible REST)');
  registry
    .command('start')
    .description('start a schema registry instance in the foreground; SIGTERM stops it cleanly')
    .requiredOption('--listen <host:port>', 'address to serve the REST API on')
    .option('--zookeeper <connect>', 'HOST:PORT[,…][/chroot]: keep state under /schemas, shared by every instance')
    .option('--data-dir <dir>', 'folder of the local file store (the embedded default, one instance)')
    .option('--log-level <level>', 'fatal, error, warn, info, debug or trace', 'info')
    .option('--tls-cert <file>', 'serve HTTPS with this PEM certificate chain (the file may hold the private key too)')
    .option('--tls-key <file>', 'PEM private key of --tls-cert (default: read from the --tls-cert file)')
    .option('--tls-key-password-file <file>', 'file whose first line is the passphrase of an encrypted key')
    .option('--tls-ca <file>', 'PEM CA bundle for client certificates')
    .option('--tls-client-auth <mode>', 'client certificates: none (default), requested or required')
    .option('--users-file <file>', 'require HTTP basic authentication of these users (lines from `registry user-line`); re-read when it changes or on SIGHUP')
    .action(async (options: RegistryStartOptions) => (await import('./commands/registry.js')).startRegistry(io, options));
  registry
    .command('user-line')
    .description('print a users-file line (scrypt hash) for a user; the password comes from $TRIBUTARY_REGISTRY_PASSWORD or the first line of stdin')
    .argument('<name>', 'user name (no ":" or spaces)')
    .requiredOption('--role <role>', 'read-only (GET and lookups), writer (+ register, compatibility tests) or admin (+ config, mode, deletes)')
    .option('--password-env <var>', 'read the password from this environment variable instead', DEFAULT_PASSWORD_ENV)
    .action(async (name: string, options: RegistryUserLineOptions) => (await import('./commands/registry-user-line.js')).printRegistryUserLine(io, name, options));

  // `schemas get --version V` is the subcommand's flag: program options (the program's own
  // --version) are then read only before the subcommand name.
  program.enablePositionalOptions();
  const schemas = program.command('schemas').description('register, read and check Avro schemas in a registry');
  schemas
    .command('register')
    .description('register a schema under a subject; prints its id')
    .requiredOption('--registry <url>', 'the registry, e.g. http://127.0.0.1:8081')
    .requiredOption('--subject <subject>', 'subject name, e.g. PageViewEvent-value')
    .requiredOption('--file <file.avsc>', 'the Avro schema')
    .option('--command-config <file>', 'registry client properties: basic.auth.credentials.source, basic.auth.user.info[.file], schema.registry.ssl.truststore.location, …')
    .action(async (options: SchemasRegisterOptions) => (await import('./commands/schemas.js')).registerSchema(io, options));
  schemas
    .command('get')
    .description('print a schema by id, or a subject\'s version (latest by default)')
    .requiredOption('--registry <url>', 'the registry')
    .option('--id <n>', 'global schema id')
    .option('--subject <subject>', 'subject name')
    .option('--version <v>', 'with --subject: a version number or latest (the default)')
    .option('--command-config <file>', 'registry client properties: basic.auth.credentials.source, basic.auth.user.info[.file], schema.registry.ssl.truststore.location, …')
    .action(async (options: SchemasGetOptions) => (await import('./commands/schemas.js')).getSchema(io, options));
  schemas
    .command('list')
    .description('list subjects and their versions')
    .requiredOption('--registry <url>', 'the registry')
    .option('--command-config <file>', 'registry client properties: basic.auth.credentials.source, basic.auth.user.info[.file], schema.registry.ssl.truststore.location, …')
    .action(async (options: SchemasListOptions) => (await import('./commands/schemas.js')).listSchemas(io, options));
  schemas
    .command('check')
    .description('test a schema against a subject; prints each incompatibility, exits 1 when incompatible')
    .requiredOption('--registry <url>', 'the registry')
    .requiredOption('--subject <subject>', 'subject name')
    .requiredOption('--file <file.avsc>', 'the candidate Avro schema')
    .option('--command-config <file>', 'registry client properties: basic.auth.credentials.source, basic.auth.user.info[.file], schema.registry.ssl.truststore.location, …')
    .action(async (options: SchemasCheckOptions) => (await import('./commands/schemas.js')).checkSchema(io, options));
  schemas
    .command('config')
    .description('show or set the compatibility level, global or of one subject')
    .requiredOption('--registry <url>', 'the registry')
    .option('--subject <subject>', 'subject name (default: the global level)')
    .option('--level <level>', 'NONE, BACKWARD, BACKWARD_TRANSITIVE, FORWARD, FORWARD_TRANSITIVE, FULL or FULL_TRANSITIVE')
    .option('--command-config <file>', 'registry client properties: basic.auth.credentials.source, basic.auth.user.info[.file], schema.registry.ssl.truststore.location, …')
    .action(async (options: SchemasConfigOptions) => (await import('./commands/schemas.js')).configureSchemas(io, options));

  const mirror = program.command('mirror').description('the offline mirror: pull from online clusters');
  mirror
    .command('start')
    .description('mirror the matching topics of online clusters into the offline cluster (exactly once and in order per source partition; at least once where source and target partition counts differ); SIGTERM stops it cleanly')
    .option('--source <name=zk>', 'an online cluster: NAME=HOST:PORT[,…]/chroot (its ZooKeeper); repeatable', collect, [])
    .option('--target-zookeeper <connect>', 'the offline cluster by its ZooKeeper (its broker registry names the brokers)')
    .option('--target-bootstrap <host:port,…>', 'the offline cluster by its brokers')
    .option('--whitelist <regex>', 'mirror the topics whose whole name matches (_audit always is)')
    .option('--blacklist <regex>', 'but not the topics whose whole name matches this')
    .option('--group <group>', 'the ZooKeeper consumer group on every source; processes of one group share the work')
    .option('--registry <url>', 'schema registry for the audit counts (tier MIRROR); without it nothing is counted')
    .option('--config <file>', 'mirror settings (YAML or JSON, as --mirror-config of a broker); flags override them')
    .option('--command-config <file>', "client properties for the target (offline) cluster's connections: security.protocol, sasl.mechanism, sasl.username, sasl.password.file, ssl.truststore.location, … (overrides the config file's targetSecurity; each source's are its security block)")
    .option('--set <name=value>', 'one mirror setting, e.g. commitIntervalMs=500; repeatable', collect, [])
    .option('--metrics <host:port>', 'serve Prometheus metrics at http://HOST:PORT/metrics')
    .option('--log-level <level>', 'fatal, error, warn, info, debug or trace', 'info')
    .action(async (options: MirrorStartOptions) => (await import('./commands/mirror.js')).startMirror(io, options));

  const audit = program.command('audit').description('record counts per time window at every tier');
  audit
    .command('report')
    .description('reconcile the counts of each tier per time window: completeness, LOSS and DUPLICATES flags, latency')
    .requiredOption('--bootstrap-server <host:port>', 'any broker of the cluster whose _audit topic to read (the offline cluster sees every tier)')
    .option('--command-config <file>', COMMAND_CONFIG_HELP)
    .requiredOption('--registry <url>', 'the schema registry the AuditCount events are framed with')
    .requiredOption('--topic <name>', 'the topic whose counts to reconcile')
    .requiredOption('--from <iso>', 'first window start, inclusive, e.g. 2024-05-01T10:00:00Z')
    .requiredOption('--to <iso>', 'end of the range: windows that start at or after --from and end at or before --to are reported')
    .option('--format <format>', 'table or json', 'table')
    .option('--lateness-ms <n>', 'a window is final this long after its end; earlier it shows as OPEN (default 300000)')
    .action(async (options: AuditReportOptions) => (await import('./commands/audit.js')).auditReport(io, options));

  const etl = program.command('etl').description('load topics into HDFS, exactly once');
  etl
    .command('run')
    .description('run a load once: recover, plan, extract, stage, commit; exits 1 if a partition could not be loaded')
    .requiredOption('--load <file>', 'the load file (YAML, see jobs/page-views.yaml)')
    .option('--accept-gap', 'record offsets lost to retention as a gap in the manifest and continue after them')
    .option('--zookeeper <connect>', 'HOST:PORT[/chroot] for the run lease; without it the lease is in-process only')
    .option('--concurrency <n>', 'partitions extracted at once (default 4; each reads its slices in turn)')
    .option('--log-level <level>', 'fatal, error, warn, info, debug or trace (default info; warn while a progress bar shows)')
    .option('--progress', 'show a progress bar on stderr even when it is not a terminal')
    .option('--no-progress', 'never show a progress bar (default: shown when stderr is a terminal)')
    .option('--progress-interval <seconds>', 'without a bar, log a progress line per task and one for the run this often (default 5)')
    .action(async (options: EtlRunOptions) => (await import('./commands/etl.js')).etlRun(io, options));
  etl
    .command('plan')
    .description('print the offset ranges the next run of a load would read, without running it')
    .requiredOption('--load <file>', 'the load file (YAML)')
    .option('--accept-gap', 'plan as `etl run --accept-gap` would')
    .action(async (options: EtlPlanOptions) => (await import('./commands/etl.js')).etlPlan(io, options));
  etl
    .command('status')
    .description('committed manifests, next offsets per partition, records per hour, quarantined records, replayed hours')
    .requiredOption('--load <file>', 'the load file (YAML)')
    .option('--watch', 'print the status again every few seconds until interrupted (Ctrl-C)')
    .option('--interval <seconds>', 'seconds between refreshes with --watch (default 5)')
    .action(async (options: EtlStatusOptions) => (await import('./commands/etl.js')).etlStatus(io, options));
  etl
    .command('ddl')
    .description('print HiveQL for the load: a CREATE EXTERNAL TABLE per topic and an ADD PARTITION per committed hour (hive section and layout of the load file); for format iceberg, how Spark, Trino, Java and DuckDB find its tables')
    .requiredOption('--load <file>', 'the load file (YAML)')
    .action(async (options: EtlDdlOptions) => (await import('./commands/etl.js')).etlDdl(io, options));
  etl
    .command('expire')
    .description('format iceberg: expire the snapshots of the load\'s tables older than --older-than (keeping the newest --retain-last of main\'s history), then delete the files only they reached')
    .requiredOption('--load <file>', 'the load file (YAML)')
    .option('--older-than <duration>', 'snapshots committed longer ago than this may expire: 90m, 12h, 5d (default 5d, Iceberg\'s history.expire.max-snapshot-age-ms)')
    .option('--retain-last <n>', 'the newest snapshots of main\'s history always kept (default 1)')
    .option('--zookeeper <connect>', 'HOST:PORT[/chroot] for the lease shared with runs; without it the lease is in-process only')
    .option('--log-level <level>', 'fatal, error, warn, info, debug or trace (default info)')
    .action(async (options: EtlExpireOptions) => (await import('./commands/etl-tables.js')).etlExpire(io, options));
  etl
    .command('orphans')
    .description('format iceberg: delete files under the load\'s tables that no snapshot reaches (lost commit races, killed replays), older than --older-than')
    .requiredOption('--load <file>', 'the load file (YAML)')
    .option('--older-than <duration>', 'only files older than this: 90m, 12h, 3d (default 3d, as Spark\'s remove_orphan_files)')
    .option('--dry-run', 'list the orphans, delete nothing')
    .option('--zookeeper <connect>', 'HOST:PORT[/chroot] for the lease shared with runs; without it the lease is in-process only')
    .option('--log-level <level>', 'fatal, error, warn, info, debug or trace (default info)')
    .action(async (options: EtlOrphansOptions) => (await import('./commands/etl-tables.js')).etlOrphans(io, options));
  etl
    .command('compact')
    .description(
      'format iceberg: rewrite the small files of each hour of the load\'s tables as files near --target-file-size, one replace snapshot per table ' +
        '(same rows; runs beside loads; a replay of those hours meanwhile makes it stop without changing anything)',
    )
    .requiredOption('--load <file>', 'the load file (YAML)')
    .option('--topic <topic>', 'only this topic\'s table')
    .option('--target-file-size <size>', 'bytes, or KiB/MiB/GiB, a rewritten file aims at (default 128MiB); files under 75% of it are small')
    .option('--min-input-files <n>', 'an hour is rewritten when it has at least this many small files (default 5, as Spark\'s rewrite_data_files)')
    .option('--from <time>', 'only hours from this one (UTC, ISO 8601); with --to')
    .option('--to <time>', 'only hours before this one (exclusive); with --from')
    .option('--log-level <level>', 'fatal, error, warn, info, debug or trace (default info)')
    .action(async (options: EtlCompactOptions) => (await import('./commands/etl-tables.js')).etlCompact(io, options));
  etl
    .command('replay')
    .description(
      'rebuild the hour folders of [--from, --to) from the offset ranges the manifests recorded, with today\'s load file and reader schema, ' +
        'as a new version of each hour; the old version is kept for `etl rollback`. An hour whose rebuilt files are the live ones gets no new version, ' +
        'so it is safe to run again after a kill. Stops before changing anything if offsets are no longer in the log',
    )
    .requiredOption('--load <file>', 'the load file (YAML)')
    .requiredOption('--from <iso>', 'first hour, inclusive: a whole UTC hour, e.g. 2026-11-29T10:00Z or 2026-11-29T10')
    .requiredOption('--to <iso>', 'end of the window, exclusive: a whole UTC hour')
    .option('--topic <name>', 'only this topic (default: every topic of the load with data in the window)')
    .option('--reason <text>', 'why, recorded in the replay manifest')
    .option('--zookeeper <connect>', 'HOST:PORT[/chroot] for the lease shared with runs; without it the lease is in-process only')
    .option('--log-level <level>', 'fatal, error, warn, info, debug or trace (default info; warn while a progress bar shows)')
    .option('--progress', 'show a progress bar on stderr even when it is not a terminal')
    .option('--no-progress', 'never show a progress bar (default: shown when stderr is a terminal)')
    .option('--progress-interval <seconds>', 'without a bar, log a progress line per task and one for the run this often (default 5)')
    .action(async (options: EtlReplayOptions) => (await import('./commands/etl.js')).etlReplay(io, options));
  etl
    .command('rollback')
    .description(
      'restore, byte for byte, the version each hour had before its last replay; the replayed version is kept. ' +
        'Safe to run again after a kill: an hour whose last replay was already rolled back is left alone (and said so). ' +
        'To roll back twice on purpose, name the version: --to-version N (etl status lists the versions kept)',
    )
    .requiredOption('--load <file>', 'the load file (YAML)')
    .option('--hour <iso>', 'one hour: a whole UTC hour, e.g. 2026-11-29T10:00Z or 2026-11-29T10')
    .option('--from <iso>', 'or the hours [--from, --to): first hour, inclusive (whole UTC hours, as etl replay takes them)')
    .option('--to <iso>', 'end of the hours, exclusive')
    .option('--topic <name>', 'only this topic (default: every topic whose hour was replayed)')
    .option('--to-version <n>', 'restore version n, the one the hour had before its live version (going back one more step on purpose); does nothing once n is live')
    .option('--reason <text>', 'why, recorded in the replay manifest')
    .option('--zookeeper <connect>', 'HOST:PORT[/chroot] for the lease shared with runs; without it the lease is in-process only')
    .option('--log-level <level>', 'fatal, error, warn, info, debug or trace', 'info')
    .action(async (options: EtlRollbackOptions) => (await import('./commands/etl.js')).etlRollback(io, options));

  program
    .command('worker')
    .description('work on load runs from the BullMQ queues (plans, partition-range tasks, commits), sharing them with every other worker; SIGTERM lets the jobs in flight finish within --grace-ms')
    .requiredOption('--redis <url>', 'the Redis of the queues, e.g. redis://127.0.0.1:6379')
    .option('--concurrency <n>', 'jobs of each queue worked on at once (default 4)')
    .option('--zookeeper <connect>', 'HOST:PORT[/chroot] for the run leases; without it they hold within this process only')
    .option('--grace-ms <ms>', 'after SIGTERM, how long jobs in flight may take to finish before they are left to other workers (default 30000)')
    .option('--lock-ms <ms>', "how long a dead worker's job stays locked before another worker takes it over (default 30000)")
    .option('--prefix <prefix>', 'Redis key prefix of the queues (default bull)')
    .option('--id <name>', 'this worker in logs and task results (default HOST-PID)')
    .option('--log-level <level>', 'fatal, error, warn, info, debug or trace (default info)')
    .action(async (options: WorkerCommandOptions) => (await import('./commands/worker.js')).runWorker(io, options));
  program
    .command('scheduler')
    .description("keep one job scheduler per load file's cron schedule (UTC) in step with a folder of load files: added, changed, removed; SIGTERM stops it")
    .requiredOption('--redis <url>', 'the Redis of the queues, e.g. redis://127.0.0.1:6379')
    .requiredOption('--loads <dir>', 'the folder of load YAML files, e.g. jobs/')
    .option('--interval-ms <ms>', 'read the folder this often besides on change (default 30000)')
    .option('--prefix <prefix>', 'Redis key prefix of the queues (default bull)')
    .option('--log-level <level>', 'fatal, error, warn, info, debug or trace (default info)')
    .action(async (options: SchedulerCommandOptions) => (await import('./commands/scheduler.js')).runScheduler(io, options));
  program
    .command('demo')
    .description('run the whole pipeline in this process: a standalone broker, the registry, sample page views over 3 hours, the audit counters and one load into a local warehouse folder; prints the hour folders and the audit report')
    .option('--dir <dir>', 'an empty or new folder for the broker, registry and warehouse (default: a fresh temporary folder); kept afterwards')
    .option('--events <n>', `page views to produce (default ${DEFAULT_DEMO_EVENTS})`)
    .option('--keep-running', 'leave the broker and the registry up afterwards and print their addresses, until Ctrl-C')
    .option('--format <format>', 'what the load writes: avro (default), parquet, or iceberg (an Iceberg v2 table, and how to query it)')
    .option('--log-level <level>', 'component logs on stderr: fatal, error, warn, info, debug or trace', 'warn')
    .action(async (options: DemoCommandOptions) => (await import('./commands/demo.js')).demo(io, options));

  program
    .command('dashboard')
    .description('serve Bull Board for the BullMQ queues and pages of loads, last runs, records per hour with completeness, audit completeness and consumer-group lag; SIGTERM stops it')
    .requiredOption('--listen <host:port>', 'address to serve the dashboard on')
    .requiredOption('--redis <url>', 'the Redis of the BullMQ queues, e.g. redis://127.0.0.1:6379')
    .option('--loads <dir>', 'folder of the load files (YAML), e.g. jobs/')
    .option('--zookeeper <connect>', 'HOST:PORT[/chroot] of the cluster whose consumer-group lag to show')
    .option('--bootstrap-server <host:port,…>', 'brokers of the cluster whose _audit topic to read (with --registry)')
    .option('--registry <url>', 'the schema registry the audit counts are framed with (with --bootstrap-server)')
    .option('--command-config <file>', `for the broker connections (audit counts, group lag): ${COMMAND_CONFIG_HELP}`)
    .option('--queue <name>', 'a queue to show even before Redis holds it (the others are found in Redis); repeatable', collect, [])
    .option('--prefix <prefix>', 'the BullMQ key prefix of the queues', 'bull')
    .option('--read-only', 'Bull Board without the buttons that retry, clean, pause or delete')
    .option('--log-level <level>', 'fatal, error, warn, info, debug or trace', 'info')
    .action(async (options: DashboardCommandOptions) => (await import('./commands/dashboard.js')).startDashboardCommand(io, options));

  return program;
}
