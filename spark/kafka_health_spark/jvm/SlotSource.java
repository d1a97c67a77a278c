package io.kafkahealth.spark;

import java.util.EnumSet;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Set;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.catalog.TableProvider;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.read.Statistics;
import org.apache.spark.sql.connector.read.SupportsReportStatistics;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ColumnarBatch;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * A data source over a {@link Slots} slot: {@code spark.read.format(SlotSource.class.getName())
 * .schema(schema).option("slot", name).load()}. Its partitions are counted, and its rows read,
 * when the plan runs: a plan planned once reads the slot's rows of the current cycle.
 *
 * <p>With {@code statistics} set, a scan reports the slot's rows and bytes as they are when the
 * plan is planned, so Spark's planner sizes its joins from them (which side a hash join builds).
 */
public final class SlotSource implements TableProvider {
  public static final String SLOT = "slot";
  public static final String ROWS_PER_PARTITION = "rowsPerPartition";
  public static final String STATISTICS = "statistics";
  /** Read the slot's columns ({@link Slots#putColumns}), in one partition, as Spark reads columns. */
  public static final String COLUMNS = "columns";
  /** How many of a slot's rows are measured to estimate its bytes. */
  static final int MEASURED_ROWS = 1_000;

  @Override
  public StructType inferSchema(CaseInsensitiveStringMap options) {
    throw new IllegalArgumentException("a slot is read with the schema it was filled with: .schema(...)");
  }

  @Override
  public boolean supportsExternalMetadata() {
    return true;
  }

  @Override
  public Table getTable(StructType schema, Transform[] partitioning, Map<String, String> properties) {
    String slot = properties.get(SLOT);
    if (slot == null) {
      throw new IllegalArgumentException("option 'slot' is required");
    }
    String per = properties.getOrDefault(ROWS_PER_PARTITION, "100000");
    boolean statistics = Boolean.parseBoolean(properties.getOrDefault(STATISTICS, "false"));
    boolean columns = Boolean.parseBoolean(properties.getOrDefault(COLUMNS, "false"));
    return new SlotTable(slot, schema, Integer.parseInt(per), statistics, columns);
  }

  static final class SlotTable implements SupportsRead {
    private final String slot;
    private final StructType schema;
    private final int rowsPerPartition;
    private final boolean statistics;
    private final boolean columns;

    SlotTable(String slot, StructType schema, int rowsPerPartition, boolean statistics, boolean columns) {
      this.slot = slot;
      this.schema = schema;
      this.rowsPerPartition = rowsPerPartition;
      this.statistics = statistics;
      this.columns = columns;
    }

    @Override
    public String name() {
      return "slot " + slot;
    }

    @Override
    @SuppressWarnings("deprecation")
    public StructType schema() {
      return schema;
    }

    @Override
    public Set<TableCapability> capabilities() {
      return EnumSet.of(TableCapability.BATCH_READ);
    }

    @Override
    public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
      return () -> new SlotScan(slot, schema, rowsPerPartition, statistics, columns);
    }
  }

  static final class SlotScan implements Scan, Batch, SupportsReportStatistics {
    private final String slot;
    private final StructType schema;
    private final int rowsPerPartition;
    private final boolean statistics;
    private final boolean columns;

    SlotScan(String slot, StructType schema, int rowsPerPartition, boolean statistics, boolean columns) {
      this.slot = slot;
      this.schema = schema;
      this.rowsPerPartition = rowsPerPartition;
      this.statistics = statistics;
      this.columns = columns;
    }

    /** The slot's rows, and its bytes estimated from its first {@link #MEASURED_ROWS} rows (none
     * reported without {@code statistics}: Spark then assumes a table too large to broadcast). */
    @Override
    public Statistics estimateStatistics() {
      if (!statistics) {
        return new Sized(OptionalLong.empty(), OptionalLong.empty());
      }
      if (columns) {
        Slots.Columns held = Slots.columns(slot);
        return new Sized(OptionalLong.of(Math.max(1, held.bytes())), OptionalLong.of(held.count()));
      }
      Slots.Held held = Slots.rows(slot);
      long measured = 0;
      long bytes = 0;
      for (InternalRow[] chunk : held.chunks()) {
        for (int i = 0; i < chunk.length && measured < MEASURED_ROWS; i++, measured++) {
          bytes += chunk[i] instanceof UnsafeRow row ? row.getSizeInBytes() : schema.defaultSize();
        }
      }
      long perRow = measured == 0 ? schema.defaultSize() : Math.max(1, bytes / measured);
      return new Sized(OptionalLong.of(perRow * held.count()), OptionalLong.of(held.count()));
    }

    @Override
    public StructType readSchema() {
      return schema;
    }

    /** The slot it reads. */
    String slot() {
      return slot;
    }

    @Override
    public String description() {
      return "slot " + slot;
    }

    @Override
    public Batch toBatch() {
      return this;
    }

    /** Called each time a copy of a planned plan runs: the slot's rows of now. */
    @Override
    public InputPartition[] planInputPartitions() {
      if (columns) {
        return new InputPartition[] {new SlotPartition(slot, 0, 1, true)};
      }
      int rows = Slots.rows(slot).count();
      int n = Math.max(1, (rows + rowsPerPartition - 1) / rowsPerPartition);
      InputPartition[] parts = new InputPartition[n];
      for (int i = 0; i < n; i++) {
        parts[i] = new SlotPartition(slot, i, n, false);
      }
      return parts;
    }

    @Override
    public PartitionReaderFactory createReaderFactory() {
      return new SlotReaderFactory();
    }
  }

  record SlotPartition(String slot, int index, int count, boolean columns) implements InputPartition {}

  record Sized(OptionalLong sizeInBytes, OptionalLong numRows) implements Statistics {}

  static final class SlotReaderFactory implements PartitionReaderFactory {
    private static final long serialVersionUID = 1L;

    @Override
    public boolean supportColumnarReads(InputPartition partition) {
      return ((SlotPartition) partition).columns();
    }

    @Override
    public PartitionReader<ColumnarBatch> createColumnarReader(InputPartition partition) {
      return new BatchReader(Slots.columns(((SlotPartition) partition).slot()).batches());
    }

    @Override
    public PartitionReader<InternalRow> createReader(InputPartition partition) {
      SlotPartition p = (SlotPartition) partition;
      Slots.Held held = Slots.rows(p.slot());
      long from = (long) held.count() * p.index() / p.count();
      long to = (long) held.count() * (p.index() + 1) / p.count();
      return new SlotReader(held.chunks(), (int) from, (int) to);
    }
  }

  /** Rows {@code from} (inclusive) to {@code to} (exclusive) of the chunks read one after another. */
  static final class SlotReader implements PartitionReader<InternalRow> {
    private final InternalRow[][] chunks;
    private int chunk;
    private int next; // within chunks[chunk]
    private int left;

    SlotReader(InternalRow[][] chunks, int from, int to) {
      this.chunks = chunks;
      this.left = to - from;
      int skip = from;
      while (chunk < chunks.length && skip >= chunks[chunk].length) {
        skip -= chunks[chunk].length;
        chunk++;
      }
      this.next = skip - 1;
    }

    @Override
    public boolean next() {
      if (left <= 0) {
        return false;
      }
      next++;
      while (next >= chunks[chunk].length) { // (left > 0: a later chunk holds the row)
        chunk++;
        next = 0;
      }
      left--;
      return true;
    }

    @Override
    public InternalRow get() {
      return chunks[chunk][next];
    }

    @Override
    public void close() {}
  }

  /** A slot's record batches, one after another. */
  static final class BatchReader implements PartitionReader<ColumnarBatch> {
    private final ColumnarBatch[] batches;
    private int next = -1;

    BatchReader(ColumnarBatch[] batches) {
      this.batches = batches;
    }

    @Override
    public boolean next() {
      return ++next < batches.length;
    }

    @Override
    public ColumnarBatch get() {
      return batches[next];
    }

    @Override
    public void close() {} // (the slot owns the columns: Slots frees them)
  }
}
