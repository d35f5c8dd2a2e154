// Sends COUNT records with a Java producer left at its defaults (idempotence on, acks=all,
// five requests in flight), then prints "sent <n> records, <e> failed" and exits 0 only if every
// send was acknowledged. Run as a single source file: java -cp "<jars>/*" DefaultProducer.java
// <bootstrap> <topic> <count>.
import java.util.Properties;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;

public class DefaultProducer {
  public static void main(String[] args) {
    String bootstrap = args[0];
    String topic = args[1];
    int count = Integer.parseInt(args[2]);
    Properties props = new Properties();
    props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
    props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
    AtomicInteger failed = new AtomicInteger();
    AtomicReference<Exception> firstFailure = new AtomicReference<>();
    try (KafkaProducer<String, String> producer = new KafkaProducer<>(props)) {
      for (int i = 0; i < count; i++) {
        producer.send(new ProducerRecord<>(topic, "key-" + i, "value-" + i), (metadata, error) -> {
          if (error != null) {
            failed.incrementAndGet();
            firstFailure.compareAndSet(null, error);
          }
        });
      }
      producer.flush();
    }
    System.out.println("sent " + count + " records, " + failed.get() + " failed");
    if (firstFailure.get() != null) {
      firstFailure.get().printStackTrace();
      System.exit(1);
    }
  }
}
