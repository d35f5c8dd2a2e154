/*
 * The Apache Iceberg Java API's view of one table of a REST catalog, as one JSON document: the
 * checker of the tables the loader commits through a catalog. Run as a single-file source program
 * on the iceberg-rest-fixture class path (test/services/maven/pom.xml):
 *
 *   java -cp "<iceberg-rest-fixture jars>/*" RestTableCheck.java CATALOG_URI NAMESPACE TABLE
 *
 * NAMESPACE is dotted (`a.b` is two levels). The table is loaded the way engines load it, with
 * Iceberg's own RESTCatalog client (its config request, then a load), and the document holds what
 * that client sees: the metadata file the catalog points at, the uuid and location, every schema
 * and the current one (as SchemaParser prints them), the partition spec, the properties, the
 * snapshots (ids as strings: they are 63-bit), the refs, the data files the current snapshot's
 * scan plans, and every record IcebergGenerics reads (timestamps as ISO text, structs as objects).
 * stdout carries the document only; logs (WARN and up) go to stderr.
 */
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.iceberg.BaseTable;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.PartitionSpecParser;
import org.apache.iceberg.Schema;
import org.apache.iceberg.SchemaParser;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.SnapshotRef;
import org.apache.iceberg.StructLike;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.rest.RESTCatalog;

public class RestTableCheck {
  private static final JsonNodeFactory JSON = JsonNodeFactory.instance;
  private static final ObjectMapper MAPPER = new ObjectMapper();

  public static void main(String[] args) throws Exception {
    System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn");
    System.setProperty("org.slf4j.simpleLogger.logFile", "System.err");
    if (args.length != 3) throw new IllegalArgumentException("usage: RestTableCheck CATALOG_URI NAMESPACE TABLE");
    try (RESTCatalog catalog = new RESTCatalog()) {
      catalog.setConf(new Configuration());
      catalog.initialize("check", Map.of("uri", args[0]));
      Table table = catalog.loadTable(TableIdentifier.of(Namespace.of(args[1].split("\\.")), args[2]));
      System.out.println(MAPPER.writeValueAsString(describe(table)));
    }
  }

  private static ObjectNode describe(Table table) throws Exception {
    ObjectNode out = JSON.objectNode();
    out.put("metadataFileLocation", ((BaseTable) table).operations().current().metadataFileLocation());
    out.put("uuid", table.uuid().toString());
    out.put("location", table.location());
    out.put("formatVersion", ((BaseTable) table).operations().current().formatVersion());
    out.put("currentSchemaId", table.schema().schemaId());
    ArrayNode schemas = out.putArray("schemas");
    for (Schema schema : table.schemas().values()) schemas.add(MAPPER.readTree(SchemaParser.toJson(schema)));
    out.set("spec", MAPPER.readTree(PartitionSpecParser.toJson(table.spec())));
    ObjectNode properties = out.putObject("properties");
    table.properties().forEach(properties::put);
    Snapshot current = table.currentSnapshot();
    out.put("currentSnapshotId", current == null ? null : Long.toString(current.snapshotId()));
    ArrayNode snapshots = out.putArray("snapshots");
    for (Snapshot snapshot : table.snapshots()) {
      ObjectNode node = snapshots.addObject();
      node.put("snapshotId", Long.toString(snapshot.snapshotId()));
      node.put("parentId", snapshot.parentId() == null ? null : Long.toString(snapshot.parentId()));
      node.put("sequenceNumber", snapshot.sequenceNumber());
      node.put("operation", snapshot.operation());
      node.put("schemaId", snapshot.schemaId());
      node.put("manifestListLocation", snapshot.manifestListLocation());
      ObjectNode summary = node.putObject("summary");
      snapshot.summary().forEach(summary::put);
    }
    ObjectNode refs = out.putObject("refs");
    for (Map.Entry<String, SnapshotRef> ref : table.refs().entrySet()) {
      refs.putObject(ref.getKey()).put("snapshotId", Long.toString(ref.getValue().snapshotId())).put("type", ref.getValue().type().name().toLowerCase());
    }
    ArrayNode files = out.putArray("files");
    ArrayNode records = out.putArray("records");
    if (current != null) {
      try (CloseableIterable<FileScanTask> tasks = table.newScan().planFiles()) {
        for (FileScanTask task : tasks) {
          ObjectNode file = files.addObject();
          file.put("path", task.file().location());
          file.put("recordCount", task.file().recordCount());
          file.put("specId", task.file().specId());
          StructLike partition = task.file().partition();
          ArrayNode values = file.putArray("partition");
          for (int i = 0; i < partition.size(); i += 1) values.add(value(partition.get(i, Object.class)));
        }
      }
      try (CloseableIterable<Record> rows = IcebergGenerics.read(table).build()) {
        for (Record row : rows) records.add(value(row));
      }
    }
    return out;
  }

  private static JsonNode value(Object value) {
    if (value == null) return JSON.nullNode();
    if (value instanceof Record record) {
      ObjectNode node = JSON.objectNode();
      List<org.apache.iceberg.types.Types.NestedField> fields = record.struct().fields();
      for (int i = 0; i < fields.size(); i += 1) node.set(fields.get(i).name(), value(record.get(i)));
      return node;
    }
    if (value instanceof List<?> list) {
      ArrayNode node = JSON.arrayNode();
      list.forEach((item) -> node.add(value(item)));
      return node;
    }
    if (value instanceof Map<?, ?> map) {
      ObjectNode node = JSON.objectNode();
      map.forEach((key, item) -> node.set(String.valueOf(key), value(item)));
      return node;
    }
    if (value instanceof Integer number) return JSON.numberNode(number);
    if (value instanceof Long number) return JSON.numberNode(number);
    if (value instanceof Boolean flag) return JSON.booleanNode(flag);
    if (value instanceof Double number) return JSON.numberNode(number);
    if (value instanceof Float number) return JSON.numberNode(number);
    return JSON.textNode(value.toString());
  }
}
