// Sends COUNT numbered records with Apache Kafka's Java producer: record n has value n (decimal),
// no key, and goes to partition n % partitions, so each partition holds its numbers in send
// order. Producer settings are the client's defaults except those given as key=value arguments.
//
// Usage: java -cp "<kafka-tools jars>/*" NumberedProducer.java BOOTSTRAP TOPIC COUNT [key=value ...]
//
// Prints to stdout: "partitions P" once metadata is known; "acked N" after every 5,000th
// acknowledgement; "failed n <exception>" for every record whose send failed; and at the end one
// line "done {json}" with the totals. Exits 0 once every send has completed, failed or not.
import java.util.Properties;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;

public class NumberedProducer {
  public static void main(String[] args) throws Exception {
    String bootstrap = args[0];
    String topic = args[1];
    long count = Long.parseLong(args[2]);
    Properties props = new Properties();
    props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
    props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
    for (int i = 3; i < args.length; i++) {
      int eq = args[i].indexOf('=');
      props.put(args[i].substring(0, eq), args[i].substring(eq + 1));
    }
    AtomicLong acked = new AtomicLong();
    AtomicLong failed = new AtomicLong();
    long start = System.nanoTime();
    try (KafkaProducer<String, String> producer = new KafkaProducer<>(props)) {
      int partitions = producer.partitionsFor(topic).size();
      System.out.println("partitions " + partitions);
      System.out.flush();
      for (long i = 0; i < count; i++) {
        final long n = i;
        producer.send(new ProducerRecord<>(topic, (int) (n % partitions), null, Long.toString(n)), (metadata, error) -> {
          if (error == null) {
            long done = acked.incrementAndGet();
            if (done % 5_000 == 0) {
              System.out.println("acked " + done);
              System.out.flush();
            }
          } else {
            failed.incrementAndGet();
            System.out.println("failed " + n + " " + error.getClass().getName() + ": " + String.valueOf(error.getMessage()).replace('\n', ' '));
            System.out.flush();
          }
        });
      }
      producer.flush();
      long ms = (System.nanoTime() - start) / 1_000_000;
      System.out.println("done {\"sent\":" + count + ",\"acked\":" + acked.get() + ",\"failed\":" + failed.get() + ",\"ms\":" + ms + ",\"partitions\":" + partitions + "}");
      System.out.flush();
    }
  }
}
