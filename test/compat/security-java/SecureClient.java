// For each (bootstrap, topic, group, client.properties) given: produces COUNT records with a
// KafkaProducer at its defaults, then reads them back with a KafkaConsumer in a group
// (auto.offset.reset=earliest) and commits, both configured with the properties file
// (security.protocol, SASL JAAS config, PEM trust/key stores). One JVM serves every
// configuration (a JVM start costs more than the work). Prints one line per configuration,
// "<topic>: produced <n> consumed <m> committed <c>", and exits 0 only if every record of every
// configuration was acknowledged, read back and committed. Run as a single source file:
//   java -cp "<jars>/*" SecureClient.java <count> (<bootstrap> <topic> <group> <client.properties>)+
import java.io.FileInputStream;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class SecureClient {
  public static void main(String[] args) throws Exception {
    int count = Integer.parseInt(args[0]);
    boolean ok = true;
    for (int at = 1; at + 3 < args.length; at += 4) ok &= run(args[at], args[at + 1], args[at + 2], count, args[at + 3]);
    System.exit(ok ? 0 : 1);
  }

  static boolean run(String bootstrap, String topic, String group, int count, String propertiesFile) throws Exception {
    Properties security = new Properties();
    try (FileInputStream in = new FileInputStream(propertiesFile)) {
      security.load(in);
    }

    Properties producerProps = new Properties();
    producerProps.putAll(security);
    producerProps.put("bootstrap.servers", bootstrap);
    producerProps.put("key.serializer", StringSerializer.class.getName());
    producerProps.put("value.serializer", StringSerializer.class.getName());
    AtomicReference<Exception> failure = new AtomicReference<>();
    Set<String> sent = new HashSet<>();
    try (KafkaProducer<String, String> producer = new KafkaProducer<>(producerProps)) {
      for (int i = 0; i < count; i++) {
        String value = topic + "-" + i;
        sent.add(value);
        producer.send(new ProducerRecord<>(topic, "key-" + i, value), (metadata, error) -> {
          if (error != null) failure.compareAndSet(null, error);
        });
      }
      producer.flush();
    }
    if (failure.get() != null) {
      System.out.println(topic + ": produce failed");
      failure.get().printStackTrace();
      return false;
    }

    Properties consumerProps = new Properties();
    consumerProps.putAll(security);
    consumerProps.put("bootstrap.servers", bootstrap);
    consumerProps.put(ConsumerConfig.GROUP_ID_CONFIG, group);
    consumerProps.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    consumerProps.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    consumerProps.put("key.deserializer", StringDeserializer.class.getName());
    consumerProps.put("value.deserializer", StringDeserializer.class.getName());
    Set<String> received = new HashSet<>();
    long committed = 0;
    try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(consumerProps)) {
      consumer.subscribe(List.of(topic));
      long deadline = System.currentTimeMillis() + 60_000;
      while (received.size() < count && System.currentTimeMillis() < deadline) {
        for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(500))) received.add(record.value());
      }
      consumer.commitSync();
      for (var offset : consumer.committed(consumer.assignment()).values()) if (offset != null) committed += offset.offset();
    }
    System.out.println(topic + ": produced " + sent.size() + " consumed " + received.size() + " committed " + committed);
    return received.equals(sent) && committed == count;
  }
}
