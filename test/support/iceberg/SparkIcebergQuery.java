/*
 * Apache Spark 4 (local mode) with Iceberg's Spark runtime querying one of the loader's tables
 * through the Hadoop catalog that `tributary etl ddl` prints, as one JSON document. Run as a
 * single-file source program on the spark-iceberg class path (test/services/maven/pom.xml):
 *
 *   java <Spark's --add-opens options> -cp "<spark-iceberg jars>/*" SparkIcebergQuery.java
 *        --conf KEY=VALUE … --table NAME --location URI --hour-from MICROS --hour-to MICROS
 *
 * The session runs on one core (`local[1]`) with its driver on 127.0.0.1, no UI, one shuffle
 * partition and UTC; --conf adds the catalog settings (the lines `etl ddl` prints) and scratch
 * folders. --table is the name `etl ddl` prints (`tributary.data.\`topic\``),
 * --location the table folder (for the path read `etl ddl` also prints), and the hour is
 * `from <= _event_time < to` in microseconds since the epoch. The document holds:
 *
 *   count          SELECT count(*) FROM table
 *   pathCount      spark.read.format("iceberg").load(location).count()
 *   rows           every row's _kafka.partition, _kafka.offset, header.eventId, _event_time (micros)
 *   hour           the hour's count(*), its rows' positions, and the Iceberg scan's file metrics
 *                  (resultDataFiles, skippedDataFiles, …: what the hour filter pruned)
 *   partitions     the `partitions` metadata table: records and files per _event_time_hour
 *   snapshots      the `snapshots` metadata table, and `main` from the `refs` one
 *   versionAsOf    count(*) and positions at the parent of main's snapshot (VERSION AS OF id)
 *   timestampAsOf  count(*) at that parent's commit time (TIMESTAMP AS OF)
 *   readers        the top-level primitive columns of every row as read by Iceberg's vectorized
 *                  Parquet reader, by its row reader, and by Spark's own (vectorized) Parquet
 *                  reader over the data files the `files` metadata table lists (listed too), each
 *                  with whether its plan ran columnar (a ColumnarToRow node); a reader that fails
 *                  gives its error instead of rows
 *
 * Snapshot ids are 63-bit, so they are strings; every other number fits a JavaScript number.
 * stdout carries the document only; Spark logs WARN and up to stderr (log4j2, configured by the
 * caller with -Dlog4j2.configurationFile).
 */
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.spark.SparkConf;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.datasources.v2.BatchScanExec;
import org.apache.spark.sql.execution.metric.SQLMetric;
import scala.jdk.javaapi.CollectionConverters;

public class SparkIcebergQuery {
  private static final JsonNodeFactory JSON = JsonNodeFactory.instance;
  private static final ObjectMapper MAPPER = new ObjectMapper();
  /** The columns every reader reads: the table's top-level primitives (Iceberg reads only those vectorized). */
  private static final String PRIMITIVES = "pageKey, url, memberId, userAgent, referrer, experiment, unix_micros(_event_time) AS eventMicros";
  /** Those columns' Spark types, for Spark's own Parquet reader. */
  private static final String PARQUET_COLUMNS = "pageKey STRING, url STRING, memberId BIGINT, userAgent STRING, referrer STRING, experiment STRING, _event_time TIMESTAMP";

  public static void main(String[] args) throws Exception {
    // Local mode on the loopback interface only, no UI, one shuffle partition, UTC; --conf may add to these.
    SparkConf conf = new SparkConf()
        .set("spark.driver.host", "127.0.0.1")
        .set("spark.driver.bindAddress", "127.0.0.1")
        .set("spark.ui.enabled", "false")
        .set("spark.ui.showConsoleProgress", "false")
        .set("spark.sql.shuffle.partitions", "1")
        .set("spark.sql.session.timeZone", "UTC");
    String table = null;
    String location = null;
    Long hourFrom = null;
    Long hourTo = null;
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--conf" -> {
          String setting = value(args, ++i);
          int equals = setting.indexOf('=');
          if (equals <= 0) throw new IllegalArgumentException("--conf needs KEY=VALUE, got " + setting);
          conf.set(setting.substring(0, equals), setting.substring(equals + 1));
        }
        case "--table" -> table = value(args, ++i);
        case "--location" -> location = value(args, ++i);
        case "--hour-from" -> hourFrom = Long.parseLong(value(args, ++i));
        case "--hour-to" -> hourTo = Long.parseLong(value(args, ++i));
        default -> throw new IllegalArgumentException("unexpected argument " + args[i]);
      }
    }
    if (table == null || location == null || hourFrom == null || hourTo == null) {
      throw new IllegalArgumentException("usage: SparkIcebergQuery [--conf KEY=VALUE]… --table NAME --location URI --hour-from MICROS --hour-to MICROS");
    }

    SparkSession spark = SparkSession.builder().master("local[1]").appName("tributary-spark-iceberg").config(conf).getOrCreate();
    try {
      ObjectNode out = JSON.objectNode();
      out.put("sparkVersion", spark.version());
      out.put("icebergVersion", org.apache.iceberg.IcebergBuild.version());

      out.put("count", single(spark.sql("SELECT count(*) FROM " + table)));
      out.put("pathCount", spark.read().format("iceberg").load(location).count());
      out.set("rows", positions(spark.sql("SELECT _kafka.partition, _kafka.offset, header.eventId, unix_micros(_event_time) FROM " + table)));

      String hourFilter = " WHERE _event_time >= timestamp_micros(" + hourFrom + ") AND _event_time < timestamp_micros(" + hourTo + ")";
      ObjectNode hour = out.putObject("hour");
      hour.put("count", single(spark.sql("SELECT count(*) FROM " + table + hourFilter)));
      // A projection without an exchange: the scan is a plain leaf of the executed plan, with its metrics.
      Dataset<Row> hourRows = spark.sql("SELECT _kafka.partition, _kafka.offset, header.eventId, unix_micros(_event_time) FROM " + table + hourFilter);
      hour.set("rows", positions(hourRows));
      hour.set("scan", scanMetrics(hourRows.queryExecution().executedPlan()));

      ArrayNode partitions = out.putArray("partitions");
      for (Row row : spark.sql("SELECT partition._event_time_hour, record_count, file_count FROM " + table + ".partitions ORDER BY 1").collectAsList()) {
        ObjectNode node = partitions.addObject();
        node.put("hour", row.getInt(0));
        node.put("records", row.getLong(1));
        node.put("files", row.getInt(2));
      }

      ArrayNode snapshots = out.putArray("snapshots");
      List<Row> snapshotRows = spark.sql(
          "SELECT snapshot_id, parent_id, unix_millis(committed_at), operation, summary['tributary.commit-id'], summary['added-records'] FROM " + table + ".snapshots ORDER BY committed_at").collectAsList();
      for (Row row : snapshotRows) {
        ObjectNode node = snapshots.addObject();
        node.put("snapshotId", Long.toString(row.getLong(0)));
        node.set("parentId", row.isNullAt(1) ? JSON.nullNode() : JSON.textNode(Long.toString(row.getLong(1))));
        node.put("committedAtMillis", row.getLong(2));
        node.put("operation", row.getString(3));
        node.put("commitId", row.getString(4));
        node.put("addedRecords", row.getString(5));
      }
      long main = spark.sql("SELECT snapshot_id FROM " + table + ".refs WHERE name = 'main'").first().getLong(0);
      out.put("main", Long.toString(main));

      // Time travel to the parent of main's snapshot: by its id, and by its commit time.
      Row current = snapshotRows.stream().filter((row) -> row.getLong(0) == main).findFirst().orElseThrow(() -> new IllegalStateException("main's snapshot " + main + " is not in the snapshots table"));
      if (!current.isNullAt(1)) {
        long parent = current.getLong(1);
        ObjectNode version = out.putObject("versionAsOf");
        version.put("snapshotId", Long.toString(parent));
        version.put("count", single(spark.sql("SELECT count(*) FROM " + table + " VERSION AS OF " + parent)));
        version.set("rows", positions(spark.sql("SELECT _kafka.partition, _kafka.offset, header.eventId, unix_micros(_event_time) FROM " + table + " VERSION AS OF " + parent)));
        long parentCommitted = snapshotRows.stream().filter((row) -> row.getLong(0) == parent).findFirst().orElseThrow().getLong(2);
        ObjectNode timestamp = out.putObject("timestampAsOf");
        timestamp.put("millis", parentCommitted);
        timestamp.put("count", single(spark.sql("SELECT count(*) FROM " + table + " TIMESTAMP AS OF timestamp_millis(" + parentCommitted + ")")));
      }

      // The same columns through each Parquet reader; a reader that fails is reported, not fatal.
      ObjectNode readers = out.putObject("readers");
      spark.conf().set("spark.sql.iceberg.vectorization.enabled", "true");
      readers.set("icebergVectorized", primitives(spark.sql("SELECT " + PRIMITIVES + " FROM " + table)));
      spark.conf().set("spark.sql.iceberg.vectorization.enabled", "false");
      readers.set("icebergRows", primitives(spark.sql("SELECT " + PRIMITIVES + " FROM " + table)));
      spark.conf().unset("spark.sql.iceberg.vectorization.enabled");
      List<String> files = new ArrayList<>();
      for (Row row : spark.sql("SELECT file_path FROM " + table + ".files ORDER BY 1").collectAsList()) files.add(row.getString(0));
      ArrayNode fileList = readers.putArray("sparkParquetFiles");
      files.forEach(fileList::add);
      // With the columns' schema given: inferring it would read every footer column, and Spark
      // refuses FIXED_LEN_BYTE_ARRAY (UUID) (header.eventId) in an inferred schema.
      Dataset<Row> parquet = spark.read().schema(PARQUET_COLUMNS).parquet(files.toArray(new String[0]));
      readers.set("sparkParquet", primitives(parquet.selectExpr(PRIMITIVES.split(", "))));

      PrintStream stdout = new PrintStream(System.out, false, StandardCharsets.UTF_8);
      stdout.println(MAPPER.writeValueAsString(out));
      stdout.flush();
    } finally {
      spark.stop();
    }
  }

  private static String value(String[] args, int index) {
    if (index >= args.length) throw new IllegalArgumentException(args[index - 1] + " needs a value");
    return args[index];
  }

  private static long single(Dataset<Row> result) {
    List<Row> rows = result.collectAsList();
    if (rows.size() != 1) throw new IllegalStateException("expected one row, got " + rows.size());
    return rows.get(0).getLong(0);
  }

  /** Rows of (partition, offset, eventId, micros) as arrays. */
  private static ArrayNode positions(Dataset<Row> result) {
    ArrayNode rows = JSON.arrayNode();
    for (Row row : result.collectAsList()) {
      ArrayNode node = rows.addArray();
      node.add(row.getInt(0));
      node.add(row.getLong(1));
      node.add(row.getString(2));
      node.add(row.getLong(3));
    }
    return rows;
  }

  /**
   * The rows of a PRIMITIVES projection and whether the plan that read them ran columnar; or, if
   * the read fails, the error (the innermost cause's class and message) and the plan.
   */
  private static ObjectNode primitives(Dataset<Row> result) {
    ObjectNode read = JSON.objectNode();
    try {
      ArrayNode rows = JSON.arrayNode();
      for (Row row : result.collectAsList()) {
        ObjectNode node = rows.addObject();
        for (int i = 0; i < row.length(); i++) {
          String name = row.schema().fields()[i].name();
          if (row.isNullAt(i)) node.putNull(name);
          else if (row.get(i) instanceof Number number) node.put(name, number.longValue());
          else node.put(name, row.get(i).toString());
        }
      }
      read.set("rows", rows);
    } catch (Exception error) {
      Throwable cause = error;
      while (cause.getCause() != null && cause.getCause() != cause) cause = cause.getCause();
      read.put("error", cause.getClass().getName() + ": " + cause.getMessage());
    }
    String plan = result.queryExecution().executedPlan().treeString();
    read.put("columnar", plan.contains("ColumnarToRow"));
    read.put("plan", plan);
    return read;
  }

  /** The custom metrics of the Iceberg batch scans in an executed plan (name → value). */
  private static ObjectNode scanMetrics(SparkPlan plan) {
    ObjectNode metrics = JSON.objectNode();
    for (SparkPlan leaf : CollectionConverters.asJava(plan.collectLeaves())) {
      if (!(leaf instanceof BatchScanExec)) continue;
      for (Map.Entry<String, SQLMetric> metric : CollectionConverters.asJava(leaf.metrics()).entrySet()) metrics.put(metric.getKey(), metric.getValue().value());
    }
    return metrics;
  }
}
