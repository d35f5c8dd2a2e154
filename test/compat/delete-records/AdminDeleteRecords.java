// Deletes records with the Java Admin client's deleteRecords (KIP-204), as Kafka Streams purges
// its repartition topics: for each "<topic>:<partition>:<offset>" argument after the bootstrap
// address, prints "<topic>-<partition> low_watermark <n>" or "<topic>-<partition> error <exception
// class>", then exits 0. Run as a single source file: java -cp "<jars>/*" AdminDeleteRecords.java
// <bootstrap> <topic>:<partition>:<offset> ….
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.DeletedRecords;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.TopicPartition;

public class AdminDeleteRecords {
  public static void main(String[] args) throws InterruptedException {
    Properties props = new Properties();
    props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
    Map<TopicPartition, RecordsToDelete> wanted = new LinkedHashMap<>();
    for (int i = 1; i < args.length; i++) {
      String[] parts = args[i].split(":");
      wanted.put(new TopicPartition(parts[0], Integer.parseInt(parts[1])), RecordsToDelete.beforeOffset(Long.parseLong(parts[2])));
    }
    try (Admin admin = Admin.create(props)) {
      Map<TopicPartition, KafkaFuture<DeletedRecords>> results = admin.deleteRecords(wanted).lowWatermarks();
      for (TopicPartition partition : wanted.keySet()) {
        try {
          System.out.println(partition + " low_watermark " + results.get(partition).get().lowWatermark());
        } catch (ExecutionException error) {
          System.out.println(partition + " error " + error.getCause().getClass().getSimpleName());
        }
      }
    }
  }
}
