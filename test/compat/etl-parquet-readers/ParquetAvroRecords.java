/*
 * Apache's Java Parquet reader (parquet-avro's AvroParquetReader) over Parquet files, three ways,
 * for the etl-parquet-readers compat test. Run as a single-file source program on the etl-readers
 * class path:
 *
 *   java -cp "<etl-readers jars>/*" ParquetAvroRecords.java FILE...
 *
 * For each FILE, prints one JSON line {"file", "createdBy", "rows", "parquetSchema",
 * "derivedSchema"} (derivedSchema: the Avro schema parquet-avro derives from the Parquet schema
 * alone, with standard 3-level lists), then one line per record and per way of reading,
 * "<way>\t<record as Avro binary, base64>":
 *
 *   embedded  AvroParquetReader as it comes (its builder's compatibility mode on), reading by
 *             the file's parquet.avro.schema: what a user of parquet-avro gets with the defaults
 *   strict    the same with compatibility off (AvroRecordConverter, which knows logical types)
 *   derived   compatibility off, reading by derivedSchema: what a reader that knows only the
 *             Parquet schema (and its logical types) gets
 *
 * The data model has no logical-type conversions, so each value is written back in its Avro
 * representation (a long for a timestamp, bytes for a decimal) exactly as the reader produced it.
 * One JVM for every file, as each start costs seconds.
 */
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.BufferedOutputStream;
import java.io.ByteArrayOutputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.avro.Schema;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericDatumWriter;
import org.apache.avro.generic.GenericRecord;
import org.apache.avro.io.BinaryEncoder;
import org.apache.avro.io.EncoderFactory;
import org.apache.hadoop.conf.Configuration;
import org.apache.parquet.avro.AvroParquetReader;
import org.apache.parquet.avro.AvroReadSupport;
import org.apache.parquet.avro.AvroSchemaConverter;
import org.apache.parquet.hadoop.ParquetFileReader;
import org.apache.parquet.hadoop.ParquetReader;
import org.apache.parquet.hadoop.metadata.ParquetMetadata;
import org.apache.parquet.io.InputFile;
import org.apache.parquet.io.LocalInputFile;
import org.apache.parquet.schema.MessageType;

public class ParquetAvroRecords {
  public static void main(String[] args) throws Exception {
    if (args.length == 0) throw new IllegalArgumentException("usage: ParquetAvroRecords FILE...");
    OutputStream out = new BufferedOutputStream(System.out);
    for (String name : args) {
      InputFile file = new LocalInputFile(Path.of(name));
      MessageType parquetSchema;
      Map<String, Object> head = new LinkedHashMap<>();
      try (ParquetFileReader reader = ParquetFileReader.open(file)) {
        ParquetMetadata footer = reader.getFooter();
        parquetSchema = footer.getFileMetaData().getSchema();
        head.put("file", name);
        head.put("createdBy", footer.getFileMetaData().getCreatedBy());
        head.put("rows", reader.getRecordCount());
        head.put("parquetSchema", parquetSchema.toString());
      }
      Configuration derivedConf = new Configuration(false);
      derivedConf.setBoolean("parquet.avro.add-list-element-records", false);
      Schema derived = new AvroSchemaConverter(derivedConf).convert(parquetSchema);
      head.put("derivedSchema", derived.toString());
      out.write(new ObjectMapper().writeValueAsBytes(head));
      out.write('\n');

      dump("embedded", file, new Configuration(false), true, out);
      dump("strict", file, new Configuration(false), false, out);
      AvroReadSupport.setAvroReadSchema(derivedConf, derived);
      dump("derived", file, derivedConf, false, out);
    }
    out.flush();
  }

  private static void dump(String way, InputFile file, Configuration conf, boolean compatible, OutputStream out) throws Exception {
    GenericData model = new GenericData();
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    BinaryEncoder encoder = null;
    AvroParquetReader.Builder<GenericRecord> builder = AvroParquetReader.<GenericRecord>builder(file).withDataModel(model).withCompatibility(compatible);
    // The builder sets parquet.avro.compatible itself (from withCompatibility) when it builds.
    builder.withConf(conf);
    try (ParquetReader<GenericRecord> reader = builder.build()) {
      for (GenericRecord record = reader.read(); record != null; record = reader.read()) {
        bytes.reset();
        encoder = EncoderFactory.get().binaryEncoder(bytes, encoder);
        new GenericDatumWriter<GenericRecord>(record.getSchema(), model).write(record, encoder);
        encoder.flush();
        out.write((way + "\t").getBytes(StandardCharsets.US_ASCII));
        out.write(Base64.getEncoder().encode(bytes.toByteArray()));
        out.write('\n');
      }
    }
  }
}
