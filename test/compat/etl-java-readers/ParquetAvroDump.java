/*
 * Apache's Java Parquet reader over one file, for the compat test (parquet-cli is not served from
 * the Maven mirror here; this stands in for its `meta` and `cat`). Run as a single-file source
 * program on the etl-readers class path:
 *
 *   java -cp "<etl-readers jars>/*" ParquetAvroDump.java FILE
 *
 * prints, first, one JSON line describing the footer: createdBy, keyValue (the key-value
 * metadata), schema (the Parquet schema as parquet-mr prints it), rows, rowGroups, columns
 * [{path, type, codec}]; then every record, read by parquet-avro's AvroParquetReader (its Avro
 * schema is the file's parquet.avro.schema), as Avro JSON, one line each: what avro-tools tojson
 * prints. One JVM for both, as each start costs seconds.
 */
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.BufferedOutputStream;
import java.io.OutputStream;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.avro.data.TimeConversions;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericDatumWriter;
import org.apache.avro.generic.GenericRecord;
import org.apache.avro.io.EncoderFactory;
import org.apache.avro.io.JsonEncoder;
import org.apache.parquet.avro.AvroParquetReader;
import org.apache.parquet.hadoop.ParquetFileReader;
import org.apache.parquet.hadoop.ParquetReader;
import org.apache.parquet.hadoop.metadata.BlockMetaData;
import org.apache.parquet.hadoop.metadata.ColumnChunkMetaData;
import org.apache.parquet.hadoop.metadata.ParquetMetadata;
import org.apache.parquet.io.InputFile;
import org.apache.parquet.io.LocalInputFile;

public class ParquetAvroDump {
  public static void main(String[] args) throws Exception {
    if (args.length != 1) throw new IllegalArgumentException("usage: ParquetAvroDump FILE");
    InputFile file = new LocalInputFile(Path.of(args[0]));
    OutputStream out = new BufferedOutputStream(System.out);
    try (ParquetFileReader reader = ParquetFileReader.open(file)) {
      ParquetMetadata footer = reader.getFooter();
      Map<String, Object> meta = new LinkedHashMap<>();
      meta.put("createdBy", footer.getFileMetaData().getCreatedBy());
      meta.put("keyValue", footer.getFileMetaData().getKeyValueMetaData());
      meta.put("schema", footer.getFileMetaData().getSchema().toString());
      meta.put("rows", reader.getRecordCount());
      meta.put("rowGroups", footer.getBlocks().size());
      List<Map<String, String>> columns = new ArrayList<>();
      for (BlockMetaData block : footer.getBlocks()) {
        for (ColumnChunkMetaData column : block.getColumns()) {
          columns.add(Map.of("path", column.getPath().toDotString(), "type", column.getPrimitiveType().getPrimitiveTypeName().name(), "codec", column.getCodec().name()));
        }
      }
      meta.put("columns", columns);
      out.write(new ObjectMapper().writeValueAsBytes(meta));
      out.write('\n');
    }
    // parquet-avro hands logical types over converted (an Instant for timestamp-millis); the
    // JSON writer needs the same conversions to print them back as Avro JSON.
    GenericData model = new GenericData();
    model.addLogicalTypeConversion(new TimeConversions.TimestampMillisConversion());
    model.addLogicalTypeConversion(new TimeConversions.DateConversion());
    model.addLogicalTypeConversion(new TimeConversions.TimeMillisConversion());
    try (ParquetReader<GenericRecord> reader = AvroParquetReader.<GenericRecord>builder(file).withDataModel(model).build()) {
      for (GenericRecord record = reader.read(); record != null; record = reader.read()) {
        JsonEncoder encoder = EncoderFactory.get().jsonEncoder(record.getSchema(), out);
        new GenericDatumWriter<GenericRecord>(record.getSchema(), model).write(record, encoder);
        encoder.flush();
        out.write('\n');
      }
    }
    out.flush();
  }
}
