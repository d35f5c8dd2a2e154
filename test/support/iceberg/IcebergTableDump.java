/*
 * The Apache Iceberg Java API's view of one table, as one JSON document: the checker the tests use
 * on the tables the loader writes by hand. Run as a single-file source program on the
 * iceberg-readers class path (test/services/maven/pom.xml):
 *
 *   java -cp "<iceberg-readers jars>/*" IcebergTableDump.java LOCATION [--snapshot ID]
 *        [--filter-column NAME --filter-hour-from MICROS --filter-hour-to MICROS]
 *
 * LOCATION is the table's folder as a URI (file:, hdfs:// or webhdfs://); the table is loaded the
 * way Hadoop-catalog readers do (`new HadoopTables(conf).load`: version hint, then probing). The
 * document holds the table metadata (schemas and spec as Iceberg's own JSON parsers print them),
 * the snapshots, refs and history, the manifests and manifest entries of the chosen snapshot (the
 * current one, or --snapshot), the data files its scan plans, with their metrics and bounds
 * decoded, every record IcebergGenerics reads, and the field ids in each planned Parquet file's
 * footer. The filter options restrict both the scan and the records to `from <= column < to`.
 *
 * JSON numbers never exceed 2^53 in magnitude, so a JavaScript reader loses nothing: snapshot ids
 * (63-bit) are always strings, and any other long is a string when it is out of that range.
 * stdout carries the document only; logs (WARN and up) go to stderr.
 */
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.PrintStream;
import java.math.BigDecimal;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.LocalTime;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.HasTableOperations;
import org.apache.iceberg.HistoryEntry;
import org.apache.iceberg.ManifestFile;
import org.apache.iceberg.MetadataTableType;
import org.apache.iceberg.MetadataTableUtils;
import org.apache.iceberg.PartitionField;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.PartitionSpecParser;
import org.apache.iceberg.Schema;
import org.apache.iceberg.SchemaParser;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.SnapshotRef;
import org.apache.iceberg.SortOrderParser;
import org.apache.iceberg.StructLike;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableMetadata;
import org.apache.iceberg.TableScan;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.expressions.Expression;
import org.apache.iceberg.expressions.Expressions;
import org.apache.iceberg.hadoop.HadoopTables;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.types.Conversions;
import org.apache.iceberg.types.Type;
import org.apache.iceberg.types.Types;
import org.apache.parquet.hadoop.ParquetFileReader;
import org.apache.parquet.hadoop.util.HadoopInputFile;
import org.apache.parquet.schema.GroupType;
import org.apache.parquet.schema.MessageType;

public class IcebergTableDump {
  private static final JsonNodeFactory JSON = JsonNodeFactory.instance;
  private static final ObjectMapper MAPPER = new ObjectMapper();
  /** Beyond this a JavaScript number is no longer exact. */
  private static final long MAX_SAFE_INTEGER = (1L << 53) - 1;
  /** Six fraction digits always, so equal instants print equally and micros are never hidden. */
  private static final DateTimeFormatter TIMESTAMP_TZ = DateTimeFormatter.ofPattern("uuuu-MM-dd'T'HH:mm:ss.SSSSSSXXX");
  private static final DateTimeFormatter TIMESTAMP = DateTimeFormatter.ofPattern("uuuu-MM-dd'T'HH:mm:ss.SSSSSS");
  private static final DateTimeFormatter TIME = DateTimeFormatter.ofPattern("HH:mm:ss.SSSSSS");

  public static void main(String[] args) throws Exception {
    // Before the first logger exists: slf4j-simple reads its level once, and logs to stderr.
    System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn");
    System.setProperty("org.slf4j.simpleLogger.logFile", "System.err");
    // Its one warning (no native library; the Java code paths are used) would only be noise.
    System.setProperty("org.slf4j.simpleLogger.log.org.apache.hadoop.util.NativeCodeLoader", "error");

    String location = null;
    Long snapshotId = null;
    String filterColumn = null;
    Long filterFrom = null;
    Long filterTo = null;
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--snapshot" -> snapshotId = Long.parseLong(value(args, ++i));
        case "--filter-column" -> filterColumn = value(args, ++i);
        case "--filter-hour-from" -> filterFrom = Long.parseLong(value(args, ++i));
        case "--filter-hour-to" -> filterTo = Long.parseLong(value(args, ++i));
        default -> {
          if (location != null || args[i].startsWith("--")) throw new IllegalArgumentException("unexpected argument " + args[i]);
          location = args[i];
        }
      }
    }
    if (location == null) throw new IllegalArgumentException("usage: IcebergTableDump LOCATION [--snapshot ID] [--filter-column NAME --filter-hour-from MICROS --filter-hour-to MICROS]");
    Expression filter = null;
    if (filterColumn != null || filterFrom != null || filterTo != null) {
      if (filterColumn == null || filterFrom == null || filterTo == null) {
        throw new IllegalArgumentException("--filter-column, --filter-hour-from and --filter-hour-to go together");
      }
      filter = Expressions.and(Expressions.greaterThanOrEqual(filterColumn, filterFrom), Expressions.lessThan(filterColumn, filterTo));
    }

    Configuration conf = new Configuration();
    Table table = new HadoopTables(conf).load(location);
    TableMetadata metadata = ((HasTableOperations) table).operations().current();
    Snapshot chosen = snapshotId == null ? table.currentSnapshot() : table.snapshot(snapshotId);
    if (snapshotId != null && chosen == null) throw new IllegalArgumentException("the table has no snapshot " + snapshotId);

    ObjectNode out = JSON.objectNode();
    out.put("formatVersion", metadata.formatVersion());
    out.put("location", table.location());
    out.put("uuid", metadata.uuid());
    out.put("metadataFileLocation", metadata.metadataFileLocation());
    out.put("lastSequenceNumber", metadata.lastSequenceNumber());
    out.put("lastUpdatedMillis", metadata.lastUpdatedMillis());
    out.put("lastColumnId", metadata.lastColumnId());
    out.set("currentSnapshotId", table.currentSnapshot() == null ? JSON.nullNode() : JSON.textNode(Long.toString(table.currentSnapshot().snapshotId())));
    out.put("currentSchemaId", metadata.currentSchemaId());
    out.set("schema", MAPPER.readTree(SchemaParser.toJson(table.schema())));
    ArrayNode schemas = out.putArray("schemas");
    for (Schema schema : metadata.schemas()) schemas.add(MAPPER.readTree(SchemaParser.toJson(schema)));
    out.put("defaultSpecId", metadata.defaultSpecId());
    out.set("spec", MAPPER.readTree(PartitionSpecParser.toJson(table.spec())));
    ArrayNode specs = out.putArray("specs");
    for (PartitionSpec spec : metadata.specs()) specs.add(MAPPER.readTree(PartitionSpecParser.toJson(spec)));
    out.set("sortOrder", MAPPER.readTree(SortOrderParser.toJson(table.sortOrder())));
    ObjectNode properties = out.putObject("properties");
    table.properties().forEach(properties::put);

    ArrayNode snapshots = out.putArray("snapshots");
    for (Snapshot snapshot : table.snapshots()) snapshots.add(snapshot(snapshot));
    ArrayNode history = out.putArray("history");
    for (HistoryEntry entry : table.history()) {
      ObjectNode node = history.addObject();
      node.put("timestampMillis", entry.timestampMillis());
      node.put("snapshotId", Long.toString(entry.snapshotId()));
    }
    ArrayNode metadataLog = out.putArray("metadataLog");
    for (TableMetadata.MetadataLogEntry entry : metadata.previousFiles()) {
      ObjectNode node = metadataLog.addObject();
      node.put("timestampMillis", entry.timestampMillis());
      node.put("file", entry.file());
    }
    ObjectNode refs = out.putObject("refs");
    for (Map.Entry<String, SnapshotRef> entry : table.refs().entrySet()) {
      SnapshotRef ref = entry.getValue();
      ObjectNode node = refs.putObject(entry.getKey());
      node.put("snapshotId", Long.toString(ref.snapshotId()));
      node.put("type", ref.type().name().toLowerCase());
      node.set("minSnapshotsToKeep", ref.minSnapshotsToKeep() == null ? JSON.nullNode() : JSON.numberNode(ref.minSnapshotsToKeep()));
      node.set("maxSnapshotAgeMs", longNode(ref.maxSnapshotAgeMs()));
      node.set("maxRefAgeMs", longNode(ref.maxRefAgeMs()));
    }

    out.set("snapshotRead", chosen == null ? JSON.nullNode() : JSON.textNode(Long.toString(chosen.snapshotId())));
    ArrayNode manifests = out.putArray("manifests");
    ArrayNode entries = out.putArray("entries");
    ArrayNode files = out.putArray("files");
    ArrayNode records = out.putArray("records");
    ArrayNode fieldIdsInFiles = out.putArray("fieldIdsInFiles");
    // A table without a snapshot has no files and no rows; Iceberg's scans would say the same.
    if (chosen != null) {
      for (ManifestFile manifest : chosen.allManifests(table.io())) manifests.add(manifest(manifest, metadata));
      dumpEntries(table, chosen, entries);

      TableScan scan = table.newScan().useSnapshot(chosen.snapshotId()).includeColumnStats();
      if (filter != null) scan = scan.filter(filter);
      List<String> planned = new ArrayList<>();
      try (CloseableIterable<FileScanTask> tasks = scan.planFiles()) {
        for (FileScanTask task : tasks) {
          files.add(dataFile(task, metadata));
          planned.add(task.file().location());
        }
      }

      IcebergGenerics.ScanBuilder read = IcebergGenerics.read(table).useSnapshot(chosen.snapshotId());
      if (filter != null) read = read.where(filter);
      try (CloseableIterable<Record> rows = read.build()) {
        for (Record row : rows) records.add(value(row.struct(), row));
      }

      for (String path : planned) fieldIdsInFiles.add(parquetFieldIds(path, conf));
    }

    PrintStream stdout = new PrintStream(System.out, false, StandardCharsets.UTF_8);
    stdout.println(MAPPER.writeValueAsString(out));
    stdout.flush();
  }

  private static String value(String[] args, int index) {
    if (index >= args.length) throw new IllegalArgumentException(args[index - 1] + " needs a value");
    return args[index];
  }

  private static JsonNode longNode(Long value) {
    if (value == null) return JSON.nullNode();
    return Math.abs(value) <= MAX_SAFE_INTEGER ? JSON.numberNode(value) : JSON.textNode(Long.toString(value));
  }

  private static ObjectNode snapshot(Snapshot snapshot) {
    ObjectNode node = JSON.objectNode();
    node.put("snapshotId", Long.toString(snapshot.snapshotId()));
    node.set("parentId", snapshot.parentId() == null ? JSON.nullNode() : JSON.textNode(Long.toString(snapshot.parentId())));
    node.put("sequenceNumber", snapshot.sequenceNumber());
    node.put("timestampMillis", snapshot.timestampMillis());
    node.put("operation", snapshot.operation());
    node.set("schemaId", snapshot.schemaId() == null ? JSON.nullNode() : JSON.numberNode(snapshot.schemaId()));
    ObjectNode summary = node.putObject("summary");
    snapshot.summary().forEach(summary::put);
    node.put("manifestListLocation", snapshot.manifestListLocation());
    return node;
  }

  private static ObjectNode manifest(ManifestFile manifest, TableMetadata metadata) {
    ObjectNode node = JSON.objectNode();
    node.put("path", manifest.path());
    node.put("length", manifest.length());
    node.put("partitionSpecId", manifest.partitionSpecId());
    node.put("content", manifest.content().name().toLowerCase());
    node.put("sequenceNumber", manifest.sequenceNumber());
    node.put("minSequenceNumber", manifest.minSequenceNumber());
    node.set("addedSnapshotId", manifest.snapshotId() == null ? JSON.nullNode() : JSON.textNode(Long.toString(manifest.snapshotId())));
    node.set("addedFilesCount", manifest.addedFilesCount() == null ? JSON.nullNode() : JSON.numberNode(manifest.addedFilesCount()));
    node.set("existingFilesCount", manifest.existingFilesCount() == null ? JSON.nullNode() : JSON.numberNode(manifest.existingFilesCount()));
    node.set("deletedFilesCount", manifest.deletedFilesCount() == null ? JSON.nullNode() : JSON.numberNode(manifest.deletedFilesCount()));
    node.set("addedRowsCount", longNode(manifest.addedRowsCount()));
    node.set("existingRowsCount", longNode(manifest.existingRowsCount()));
    node.set("deletedRowsCount", longNode(manifest.deletedRowsCount()));
    ArrayNode partitions = node.putArray("partitions");
    List<Types.NestedField> partitionFields = metadata.spec(manifest.partitionSpecId()).partitionType().fields();
    List<ManifestFile.PartitionFieldSummary> summaries = manifest.partitions() == null ? List.of() : manifest.partitions();
    for (int i = 0; i < summaries.size(); i++) {
      ManifestFile.PartitionFieldSummary summary = summaries.get(i);
      Type type = partitionFields.get(i).type();
      ObjectNode field = partitions.addObject();
      field.put("containsNull", summary.containsNull());
      field.set("containsNaN", summary.containsNaN() == null ? JSON.nullNode() : JSON.booleanNode(summary.containsNaN()));
      field.set("lowerBound", summary.lowerBound() == null ? JSON.nullNode() : JSON.textNode(bound(type, summary.lowerBound())));
      field.set("upperBound", summary.upperBound() == null ? JSON.nullNode() : JSON.textNode(bound(type, summary.upperBound())));
    }
    return node;
  }

  /**
   * Every entry of the snapshot's manifests, deleted and existing ones included, as the `entries`
   * metadata table gives them (the manifest reader's own entry API is package-private).
   */
  private static void dumpEntries(Table table, Snapshot snapshot, ArrayNode entries) throws Exception {
    Table entriesTable = MetadataTableUtils.createMetadataTableInstance(table, MetadataTableType.ENTRIES);
    Types.StructType rowType = entriesTable.schema().asStruct();
    try (CloseableIterable<FileScanTask> tasks = entriesTable.newScan().useSnapshot(snapshot.snapshotId()).planFiles()) {
      for (FileScanTask task : tasks) {
        try (CloseableIterable<StructLike> rows = task.asDataTask().rows()) {
          for (StructLike row : rows) {
            ObjectNode node = JSON.objectNode();
            node.put("status", switch (row.get(position(rowType, "status"), Integer.class)) {
              case 0 -> "existing";
              case 1 -> "added";
              case 2 -> "deleted";
              default -> "unknown";
            });
            Long entrySnapshot = row.get(position(rowType, "snapshot_id"), Long.class);
            node.set("snapshotId", entrySnapshot == null ? JSON.nullNode() : JSON.textNode(Long.toString(entrySnapshot)));
            node.set("sequenceNumber", longNode(row.get(position(rowType, "sequence_number"), Long.class)));
            node.set("fileSequenceNumber", longNode(row.get(position(rowType, "file_sequence_number"), Long.class)));
            Types.StructType fileType = rowType.field("data_file").type().asStructType();
            StructLike file = row.get(position(rowType, "data_file"), StructLike.class);
            node.put("filePath", file.get(position(fileType, "file_path"), CharSequence.class).toString());
            node.put("content", switch (file.get(position(fileType, "content"), Integer.class)) {
              case 0 -> "data";
              case 1 -> "position_deletes";
              case 2 -> "equality_deletes";
              default -> "unknown";
            });
            node.set("recordCount", longNode(file.get(position(fileType, "record_count"), Long.class)));
            entries.add(node);
          }
        }
      }
    }
  }

  private static int position(Types.StructType struct, String name) {
    List<Types.NestedField> fields = struct.fields();
    for (int i = 0; i < fields.size(); i++) if (fields.get(i).name().equals(name)) return i;
    throw new IllegalStateException("no field " + name + " in " + struct);
  }

  private static ObjectNode dataFile(FileScanTask task, TableMetadata metadata) {
    DataFile file = task.file();
    PartitionSpec spec = metadata.spec(file.specId());
    ObjectNode node = JSON.objectNode();
    node.put("path", file.location());
    node.put("format", file.format().name().toLowerCase());
    node.put("specId", file.specId());
    ObjectNode partition = node.putObject("partition");
    List<PartitionField> partitionFields = spec.fields();
    List<Types.NestedField> partitionTypes = spec.partitionType().fields();
    for (int i = 0; i < partitionFields.size(); i++) {
      partition.set(partitionFields.get(i).name(), value(partitionTypes.get(i).type(), file.partition().get(i, Object.class)));
    }
    node.put("partitionPath", spec.partitionToPath(file.partition()));
    node.put("recordCount", file.recordCount());
    node.put("fileSizeInBytes", file.fileSizeInBytes());
    node.set("columnSizes", counts(file.columnSizes()));
    node.set("valueCounts", counts(file.valueCounts()));
    node.set("nullValueCounts", counts(file.nullValueCounts()));
    node.set("nanValueCounts", counts(file.nanValueCounts()));
    node.set("lowerBounds", bounds(file.lowerBounds(), metadata));
    node.set("upperBounds", bounds(file.upperBounds(), metadata));
    ArrayNode splitOffsets = JSON.arrayNode();
    if (file.splitOffsets() != null) for (Long offset : file.splitOffsets()) splitOffsets.add(longNode(offset));
    node.set("splitOffsets", file.splitOffsets() == null ? JSON.nullNode() : splitOffsets);
    node.set("sortOrderId", file.sortOrderId() == null ? JSON.nullNode() : JSON.numberNode(file.sortOrderId()));
    node.set("dataSequenceNumber", longNode(file.dataSequenceNumber()));
    node.set("fileSequenceNumber", longNode(file.fileSequenceNumber()));
    node.put("deleteFiles", task.deletes().size());
    return node;
  }

  private static JsonNode counts(Map<Integer, Long> counts) {
    if (counts == null) return JSON.nullNode();
    ObjectNode node = JSON.objectNode();
    counts.entrySet().stream().sorted(Map.Entry.comparingByKey()).forEach((entry) -> node.set(Integer.toString(entry.getKey()), longNode(entry.getValue())));
    return node;
  }

  /** Bounds decoded with the type of their field id, found in any of the table's schemas. */
  private static JsonNode bounds(Map<Integer, ByteBuffer> bounds, TableMetadata metadata) {
    if (bounds == null) return JSON.nullNode();
    ObjectNode node = JSON.objectNode();
    bounds.entrySet().stream().sorted(Map.Entry.comparingByKey()).forEach((entry) -> {
      Type type = fieldType(entry.getKey(), metadata);
      node.put(Integer.toString(entry.getKey()), type == null ? "unknown field id; bytes " + base64(entry.getValue()) : bound(type, entry.getValue()));
    });
    return node;
  }

  private static Type fieldType(int id, TableMetadata metadata) {
    Type current = metadata.schema().findType(id);
    if (current != null) return current;
    for (Schema schema : metadata.schemas()) {
      if (schema.findType(id) != null) return schema.findType(id);
    }
    return null;
  }

  /**
   * A bound as text: numbers, strings, booleans and UUIDs as Java prints them, dates as days and
   * times and timestamps as micros (Iceberg's own stored values), binary as base64, decimals plain.
   */
  private static String bound(Type type, ByteBuffer buffer) {
    Object value = Conversions.fromByteBuffer(type, buffer.duplicate());
    if (value instanceof ByteBuffer bytes) return base64(bytes);
    if (value instanceof BigDecimal decimal) return decimal.toPlainString();
    return String.valueOf(value);
  }

  private static String base64(ByteBuffer buffer) {
    ByteBuffer copy = buffer.duplicate();
    byte[] bytes = new byte[copy.remaining()];
    copy.get(bytes);
    return Base64.getEncoder().encodeToString(bytes);
  }

  /**
   * A value as JSON, led by its Iceberg type. It takes both the generic reader's Java values
   * (OffsetDateTime, LocalDate, …) and the internal ones that partitions and metadata rows hold
   * (micros and days as numbers).
   */
  private static JsonNode value(Type type, Object value) {
    if (value == null) return JSON.nullNode();
    switch (type.typeId()) {
      case STRUCT: {
        Types.StructType struct = type.asStructType();
        StructLike row = (StructLike) value;
        ObjectNode node = JSON.objectNode();
        List<Types.NestedField> fields = struct.fields();
        for (int i = 0; i < fields.size(); i++) node.set(fields.get(i).name(), value(fields.get(i).type(), row.get(i, Object.class)));
        return node;
      }
      case LIST: {
        ArrayNode node = JSON.arrayNode();
        for (Object element : (List<?>) value) node.add(value(type.asListType().elementType(), element));
        return node;
      }
      case MAP: {
        Types.MapType map = type.asMapType();
        if (map.keyType().typeId() == Type.TypeID.STRING) {
          ObjectNode node = JSON.objectNode();
          for (Map.Entry<?, ?> entry : ((Map<?, ?>) value).entrySet()) node.set(entry.getKey().toString(), value(map.valueType(), entry.getValue()));
          return node;
        }
        ArrayNode node = JSON.arrayNode();
        for (Map.Entry<?, ?> entry : ((Map<?, ?>) value).entrySet()) {
          ObjectNode pair = node.addObject();
          pair.set("key", value(map.keyType(), entry.getKey()));
          pair.set("value", value(map.valueType(), entry.getValue()));
        }
        return node;
      }
      case BOOLEAN:
        return JSON.booleanNode((Boolean) value);
      case INTEGER:
        return JSON.numberNode((Integer) value);
      case LONG:
        return longNode((Long) value);
      case FLOAT: {
        float number = (Float) value;
        return Float.isFinite(number) ? JSON.numberNode(number) : JSON.textNode(Float.toString(number));
      }
      case DOUBLE: {
        double number = (Double) value;
        return Double.isFinite(number) ? JSON.numberNode(number) : JSON.textNode(Double.toString(number));
      }
      case DATE:
        return JSON.textNode((value instanceof Integer days ? LocalDate.ofEpochDay(days) : (LocalDate) value).toString());
      case TIME:
        return JSON.textNode(TIME.format(value instanceof Long micros ? LocalTime.ofNanoOfDay(micros * 1000) : (LocalTime) value));
      case TIMESTAMP: {
        boolean adjustToUtc = ((Types.TimestampType) type).shouldAdjustToUTC();
        if (value instanceof Long micros) {
          Instant instant = Instant.EPOCH.plusNanos(Math.multiplyExact(micros, 1000L));
          return JSON.textNode(adjustToUtc ? TIMESTAMP_TZ.format(instant.atOffset(ZoneOffset.UTC)) : TIMESTAMP.format(LocalDateTime.ofInstant(instant, ZoneOffset.UTC)));
        }
        if (value instanceof OffsetDateTime timestamp) return JSON.textNode(TIMESTAMP_TZ.format(timestamp));
        return JSON.textNode(TIMESTAMP.format((LocalDateTime) value));
      }
      case STRING:
        return JSON.textNode(value.toString());
      case UUID:
        return JSON.textNode(value instanceof UUID uuid ? uuid.toString() : uuidFromBytes((ByteBuffer) value));
      case FIXED:
      case BINARY:
        return JSON.textNode(value instanceof byte[] bytes ? Base64.getEncoder().encodeToString(bytes) : base64((ByteBuffer) value));
      case DECIMAL:
        return JSON.textNode(((BigDecimal) value).toPlainString());
      default:
        return JSON.textNode(value.toString());
    }
  }

  private static String uuidFromBytes(ByteBuffer buffer) {
    ByteBuffer copy = buffer.duplicate();
    return new UUID(copy.getLong(), copy.getLong()).toString();
  }

  /**
   * Every node of a Parquet file's schema with the field id its footer carries (null when it has
   * none), read with parquet-hadoop: proof that the ids are in the file, as Iceberg's reader
   * otherwise numbers top-level columns by position.
   */
  private static ObjectNode parquetFieldIds(String path, Configuration conf) throws Exception {
    ObjectNode node = JSON.objectNode();
    node.put("path", path);
    ArrayNode columns = node.putArray("columns");
    try (ParquetFileReader reader = ParquetFileReader.open(HadoopInputFile.fromPath(new Path(path), conf))) {
      MessageType schema = reader.getFooter().getFileMetaData().getSchema();
      addFieldIds(schema, "", columns);
    }
    return node;
  }

  private static void addFieldIds(GroupType group, String prefix, ArrayNode columns) {
    for (org.apache.parquet.schema.Type field : group.getFields()) {
      String path = prefix.isEmpty() ? field.getName() : prefix + "." + field.getName();
      ObjectNode column = columns.addObject();
      column.put("path", path);
      column.set("fieldId", field.getId() == null ? JSON.nullNode() : JSON.numberNode(field.getId().intValue()));
      column.put("type", field.isPrimitive() ? field.asPrimitiveType().getPrimitiveTypeName().name() : "group");
      column.put("repetition", field.getRepetition().name().toLowerCase());
      // As parquet-mr prints it, e.g. TIMESTAMP(MICROS,true): the UTC flag readers disagree on.
      column.set("logicalType", field.getLogicalTypeAnnotation() == null ? JSON.nullNode() : JSON.textNode(field.getLogicalTypeAnnotation().toString()));
      if (!field.isPrimitive()) addFieldIds(field.asGroupType(), path, columns);
    }
  }
}
