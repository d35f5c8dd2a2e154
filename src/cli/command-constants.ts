/**
 * Values `program.ts` needs while it builds the command tree (help texts, option defaults), kept
 * apart from the command modules so that building the tree loads none of them: each command's
 * module is imported only when that command runs. Import nothing heavy here.
 */
import { MAX_SCRAM_ITERATIONS, MIN_SCRAM_ITERATIONS } from '../protocol/sasl/scram.js';

/** `--command-config FILE` of the commands that reach brokers. */
export const COMMAND_CONFIG_HELP =
  'client properties file (Kafka tools\' --command-config): security.protocol, sasl.mechanism, sasl.username, sasl.password.file ' +
  '(or the environment variable TRIBUTARY_SASL_PASSWORD), ssl.truststore.location, ssl.keystore.location, ssl.endpoint.identification.algorithm';

/** Page views `tributary demo` produces unless told otherwise (--events). */
export const DEFAULT_DEMO_EVENTS = 30_000;

/** `registry user-line`: the environment variable the password is read from by default (--password-env). */
export const DEFAULT_PASSWORD_ENV = 'TRIBUTARY_REGISTRY_PASSWORD';

/** TRIBUTARY_ETL_FAILPOINT=<name>[:<n>]: `etl run|replay|rollback` and `worker` kill themselves at that moment (crash tests only). */
export const FAILPOINT_VARIABLE = 'TRIBUTARY_ETL_FAILPOINT';

/** In a standalone broker's data dir: the in-process coordination state (topics, configs). */
export const STANDALONE_STATE_FILE = 'standalone-coordination.json';

/** The help of `tributary groups`: the two kinds of group, and how to reach each. */
export const GROUPS_HELP = `
Two kinds of consumer group share one offset registry. A group id is one kind or the
other: whichever uses it first claims it, and the other kind is refused that id.

  ZooKeeper groups   the paper's groups: Tributary's own group consumer (tributary consume
                     --group --zookeeper, ZooKeeperConsumer) and the mirror. Cluster mode
                     only. Members register in ZooKeeper and share the partitions out among
                     themselves (Algorithm 1 of the paper); no broker coordinates them.
  broker groups      the groups of standard Kafka clients given a group.id: kafkajs,
                     librdkafka (kcat -G), the Java consumer. Standalone or cluster. A
                     coordinator broker runs Kafka's classic group protocol (JoinGroup,
                     SyncGroup, Heartbeat); kafka-consumer-groups.sh works for them too.

Reach them with exactly one of:
  --zookeeper HOST:PORT[/chroot]  reads the registry of a cluster: groups of both kinds.
                                  A broker group's state and members come from its
                                  coordinator, and changes to it go through it.
  --bootstrap-server HOST:PORT    speaks the Kafka protocol to the brokers: broker groups
                                  (ListGroups on every broker, then the coordinator). The
                                  only way in standalone mode, whose store is inside the
                                  broker process. ZooKeeper groups are not listed this way.

Examples:
  tributary groups list --bootstrap-server localhost:9092
  tributary groups describe --zookeeper localhost:2181 --group page-views
  tributary groups reset-offsets --bootstrap-server localhost:9092 --group app --topic events --to-earliest
  tributary groups delete --bootstrap-server localhost:9092 --group app
`;

/** The environment variable a password may come from when no password flag is given. */
export const USER_PASSWORD_ENV = 'TRIBUTARY_USER_PASSWORD';

/** The help of `tributary users`: what is stored, where the password comes from, how to reach the store. */
export const USERS_HELP = `
Users authenticate to SASL listeners with SCRAM-SHA-512, SCRAM-SHA-256 or PLAIN (PLAIN is
checked against the stored SCRAM keys). Only a salt, an iteration count (${MIN_SCRAM_ITERATIONS}–${MAX_SCRAM_ITERATIONS}) and
two derived keys are stored per mechanism, at /config/users/<user> as Kafka keeps them.
Brokers pick up a change at the next login; no restart.

The password is never a flag. Give exactly one of:
  --password-file FILE     the file's contents (one trailing newline is dropped)
  --password-stdin         standard input (one trailing newline is dropped)
  ${USER_PASSWORD_ENV}  the environment variable, when neither flag is given

Reach the store with exactly one of:
  --zookeeper HOST:PORT[/chroot]  the cluster's ZooKeeper (brokers running or not)
  --data-dir DIR                  a standalone broker's data dir, while that broker is
                                  stopped (it reads its users at start)

Examples:
  tributary users add alice --mechanism SCRAM-SHA-512 --password-file alice.pw --zookeeper localhost:2181
  printf '%s' "$PW" | tributary users add bob --mechanism SCRAM-SHA-256 --password-stdin --zookeeper localhost:2181/online
  tributary users list --zookeeper localhost:2181
  tributary users remove alice --zookeeper localhost:2181
`;
