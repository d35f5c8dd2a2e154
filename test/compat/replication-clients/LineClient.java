// Apache Kafka's Java producer or group consumer at the client's DEFAULT settings, driven line by
// line, for test/compat/replication-clients.test.ts. It runs in Java's source-file mode on any
// kafka-clients 3.x/4.x classpath (no build step).
//
//   java -cp "<jars>/*" LineClient.java produce BOOTSTRAP TOPIC
//     Sends every stdin line as one record (key and value = the line, default partitioner: the
//     key's hash spreads the records over the partitions, where the sticky choice for keyless
//     records would put a few hundred small ones all in one partition). Prints
//     "ack VALUE PARTITION OFFSET" or "fail VALUE EXCEPTION: MESSAGE" for each as its callback
//     runs; at the end of input it flushes, closes the producer and prints "done".
//     Settings: only bootstrap.servers and the serializers (so idempotence on, acks=all, retries
//     and delivery.timeout.ms at their defaults).
//
//   java -cp "<jars>/*" LineClient.java consume BOOTSTRAP TOPIC GROUP
//     Subscribes to TOPIC in GROUP and prints "assigned P,P,…" / "revoked P,…" on each rebalance
//     and "record PARTITION OFFSET LEADER_EPOCH VALUE" for each record (epoch -1 when the batch
//     has none). On SIGTERM it closes the consumer (which commits, enable.auto.commit being on by
//     default) and prints "closed". Settings: bootstrap.servers, group.id, the deserializers and
//     auto.offset.reset=earliest (what kafka-console-consumer's --from-beginning sets); the rest
//     at the defaults.
//
//   java -cp "<jars>/*" LineClient.java consume-assigned BOOTSTRAP TOPIC
//     Without a group: assign()s every partition of TOPIC (as kafka-console-consumer --partition
//     does for one) and reads them from the beginning, printing "assigned P,P,…" once and the same
//     "record …" lines; on SIGTERM it closes and prints "closed". No rebalance ever resets its
//     positions, so it fetches through a leader change and validates its positions against the
//     new leader (OffsetForLeaderEpoch, KIP-320). Settings: bootstrap.servers, the deserializers
//     and auto.offset.reset=earliest.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.Collectors;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class LineClient {
  private static final PrintStream OUT = new PrintStream(System.out, true, StandardCharsets.UTF_8);

  public static void main(String[] args) throws Exception {
    switch (args[0]) {
      case "produce" -> produce(args[1], args[2]);
      case "consume" -> consume(args[1], args[2], args[3]);
      case "consume-assigned" -> consumeAssigned(args[1], args[2]);
      default -> throw new IllegalArgumentException("mode must be produce, consume or consume-assigned, not " + args[0]);
    }
  }

  private static void produce(String bootstrap, String topic) throws Exception {
    Properties props = new Properties();
    props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
    props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
    BufferedReader input = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    try (KafkaProducer<String, String> producer = new KafkaProducer<>(props)) {
      for (String line = input.readLine(); line != null; line = input.readLine()) {
        if (line.isEmpty()) continue;
        final String value = line;
        producer.send(new ProducerRecord<>(topic, value, value), (metadata, error) -> {
          if (error == null) {
            OUT.println("ack " + value + " " + metadata.partition() + " " + metadata.offset());
          } else {
            OUT.println("fail " + value + " " + error.getClass().getName() + ": " + String.valueOf(error.getMessage()).replace('\n', ' '));
          }
        });
      }
      producer.flush();
    }
    OUT.println("done");
  }

  private static void consume(String bootstrap, String topic, String group) throws Exception {
    Properties props = consumerProperties(bootstrap);
    props.put(ConsumerConfig.GROUP_ID_CONFIG, group);
    KafkaConsumer<String, String> consumer = new KafkaConsumer<>(props);
    pollUntilStopped(consumer, () -> consumer.subscribe(List.of(topic), new ConsumerRebalanceListener() {
      @Override
      public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
        OUT.println("revoked " + list(partitions));
      }

      @Override
      public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
        OUT.println("assigned " + list(partitions));
      }
    }));
  }

  private static void consumeAssigned(String bootstrap, String topic) throws Exception {
    KafkaConsumer<String, String> consumer = new KafkaConsumer<>(consumerProperties(bootstrap));
    pollUntilStopped(consumer, () -> {
      List<TopicPartition> partitions = consumer.partitionsFor(topic, Duration.ofSeconds(60)).stream().map(info -> new TopicPartition(topic, info.partition())).collect(Collectors.toList());
      consumer.assign(partitions);
      OUT.println("assigned " + list(partitions));
    });
  }

  private static Properties consumerProperties(String bootstrap) {
    Properties props = new Properties();
    props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
    props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
    return props;
  }

  /** Runs `start`, then prints every record until SIGTERM, then closes the consumer (a group consumer commits) and prints "closed". */
  private static void pollUntilStopped(KafkaConsumer<String, String> consumer, Runnable start) {
    AtomicBoolean running = new AtomicBoolean(true);
    CountDownLatch closed = new CountDownLatch(1);
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      running.set(false);
      consumer.wakeup();
      try {
        closed.await();
      } catch (InterruptedException interrupted) {
        Thread.currentThread().interrupt();
      }
    }));
    try {
      start.run();
      while (running.get()) {
        for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(200))) {
          OUT.println("record " + record.partition() + " " + record.offset() + " " + record.leaderEpoch().orElse(-1) + " " + record.value());
        }
      }
    } catch (WakeupException wakeup) {
      // SIGTERM: close below.
    } finally {
      consumer.close();
      OUT.println("closed");
      closed.countDown();
    }
  }

  private static String list(Collection<TopicPartition> partitions) {
    return partitions.stream().map(partition -> String.valueOf(partition.partition())).sorted().collect(Collectors.joining(","));
  }
}
