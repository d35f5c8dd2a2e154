// Parses HiveQL from stdin with Apache Spark's SQL parser (CatalystSqlParser, no session or
// metastore needed) and prints, per statement, the logical plan's class and its text on one line:
// `CreateTable\t…` or `AddPartitions\t…`. A statement Spark cannot parse fails with its message.
// Statements end with `;` at the end of a line, as `tributary etl ddl` prints them.
import org.apache.spark.sql.catalyst.parser.CatalystSqlParser$;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;

public class ParseHiveDdl {
  public static void main(String[] args) throws Exception {
    String text = new String(System.in.readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
    for (String statement : text.split("(?m);[ \\t]*$")) {
      String withoutComments = statement.replaceAll("(?m)^\\s*--.*$", "").trim();
      if (withoutComments.isEmpty()) continue;
      LogicalPlan plan = CatalystSqlParser$.MODULE$.parsePlan(statement); // comments and all
      System.out.println(plan.getClass().getSimpleName() + "\t" + plan.toString().replace('\n', ' '));
    }
  }
}
