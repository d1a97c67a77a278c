package io.kafkahealth.spark;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VectorLoader;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.message.ArrowRecordBatch;
import org.apache.arrow.vector.types.pojo.Schema;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.classic.Dataset;
import org.apache.spark.sql.classic.SparkSession;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.execution.CoalesceExec;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.arrow.ArrowConverters$;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.ArrowUtils$;
import org.apache.spark.sql.vectorized.ArrowColumnVector;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarBatch;

import scala.collection.Iterator;

/**
 * Rows and values kept in the driver JVM under a name, read when a plan runs.
 *
 * <p>A plan built over a slot ({@link SlotSource}) or a parameter ({@link Plans#PARAM_FUNCTION})
 * reads what the slot holds when its tasks run, not what it held when the plan was built: a
 * policy's plans are built and planned once, and each cycle only swaps the rows underneath.
 * Tasks read the registry directly, so this works where executors share the driver's JVM (a
 * local master) and nowhere else.
 *
 * <p>A slot holds rows, or columns ({@link #putColumns}): Arrow record batches kept as they came,
 * off the heap, read as columns by a scan with {@code columns} set.
 */
public final class Slots {
  private static final ConcurrentHashMap<String, Held> ROWS = new ConcurrentHashMap<>();
  private static final ConcurrentHashMap<String, Columns> COLUMNS = new ConcurrentHashMap<>();
  private static final ConcurrentHashMap<String, Long> PARAMS = new ConcurrentHashMap<>();

  private Slots() {}

  /** Run {@code rows}'s plan and keep its rows under {@code slot}; returns how many. A plan over
   * a local relation (a frame built from Arrow) is collected without a Spark job. */
  public static int fill(String slot, Dataset<?> rows) {
    InternalRow[] collected = collect(rows);
    keep(slot, Held.of(collected));
    return collected.length;
  }

  /**
   * The rows of {@code rows}'s plan. A coalesce on top changes only how rows are split into
   * partitions, not which rows: it is skipped, so a local relation coalesced to fewer partitions
   * (as frames built from Arrow are) is still collected in the driver without a Spark job.
   */
  static InternalRow[] collect(Dataset<?> rows) {
    SparkPlan plan = rows.queryExecution().executedPlan();
    while (plan instanceof CoalesceExec coalesce) {
      plan = coalesce.child();
    }
    return plan.executeCollect();
  }

  /**
   * Rows decoded from Arrow record batches (what PySpark sends for {@code createDataFrame} of an
   * Arrow table), as Spark keeps them: no Dataset, so no plan analysed over the rows, and no job.
   */
  public static InternalRow[] fromArrow(Iterator<byte[]> batches, String schemaJson, String timeZone) {
    StructType schema = (StructType) DataType.fromJson(schemaJson);
    Iterator<InternalRow> rows =
        ArrowConverters$.MODULE$.fromBatchIterator(batches, schema, timeZone, true, false, null);
    UnsafeProjection copy = UnsafeProjection.create(schema);
    java.util.List<InternalRow> kept = new java.util.ArrayList<>();
    while (rows.hasNext()) {
      kept.add(copy.apply(rows.next()).copy()); // (the batches' vectors are freed after)
    }
    return kept.toArray(new InternalRow[0]);
  }

  /**
   * Keep the Arrow record batches {@code batches} (as {@link #fromArrow} reads them) under
   * {@code slot} as columns, as they came: no row is made, and the columns live off the heap. The
   * columns the slot held before are freed: no plan may still read them (a policy's cycle fills
   * its slots before it runs a plan, one cycle at a time). Returns how many rows.
   */
  public static int putColumns(String slot, Iterator<byte[]> batches, String schemaJson, String timeZone) {
    StructType schema = (StructType) DataType.fromJson(schemaJson);
    Schema arrow = ArrowUtils$.MODULE$.toArrowSchema(
            schema, timeZone, true, false, ArrowUtils$.MODULE$.toArrowSchema$default$5());
    Columns columns = Columns.load(slot, batches, arrow);
    ROWS.remove(slot);
    Columns before = COLUMNS.put(slot, columns);
    if (before != null) {
      before.close();
    }
    return columns.count();
  }

  /** The columns under {@code slot} (none when it holds rows, or nothing). */
  public static Columns columns(String slot) {
    return COLUMNS.getOrDefault(slot, Columns.NONE);
  }

  /** How many rows {@code slot} holds, as rows or as columns. */
  public static int count(String slot) {
    Columns columns = COLUMNS.get(slot);
    return columns != null ? columns.count() : rows(slot).count();
  }

  /** Keep {@code rows} under {@code slot}; returns how many. */
  public static int put(String slot, InternalRow[] rows) {
    keep(slot, Held.of(rows));
    return rows.length;
  }

  /** Run {@code plan} and keep its rows under {@code slot}; returns how many. */
  public static int fillFrom(SparkSession session, String slot, PreparedPlan plan) {
    InternalRow[] collected = plan.collect(session);
    keep(slot, Held.of(collected));
    return collected.length;
  }

  /** Keep {@code chunks} under {@code slot}, as they are (rows shared, not copied); returns how
   * many rows. {@link HistoryRows} fills a window's slot this way. */
  static int put(String slot, List<InternalRow[]> chunks) {
    Held held = new Held(chunks.toArray(new InternalRow[0][]));
    keep(slot, held);
    return held.count();
  }

  /** The rows under {@code slot} (none when nothing was filled). */
  public static Held rows(String slot) {
    return ROWS.getOrDefault(slot, Held.NONE);
  }

  public static void setParam(String name, long value) {
    PARAMS.put(name, value);
  }

  /** A parameter's value; a plan that reads one never set fails its task. */
  public static long param(String name) {
    Long value = PARAMS.get(name);
    if (value == null) {
      throw new IllegalStateException("kafka-health parameter " + name + " is not set");
    }
    return value;
  }

  /** Forget every slot and parameter whose name starts with {@code prefix} (a policy's). */
  public static void drop(String prefix) {
    ROWS.keySet().removeIf(k -> k.startsWith(prefix));
    PARAMS.keySet().removeIf(k -> k.startsWith(prefix));
    new ArrayList<>(COLUMNS.keySet()).stream().filter(k -> k.startsWith(prefix)).forEach(Slots::dropColumns);
  }

  /** Keep {@code held} under {@code slot}, in place of the rows or columns it held. */
  private static void keep(String slot, Held held) {
    dropColumns(slot);
    ROWS.put(slot, held);
  }

  private static void dropColumns(String slot) {
    Columns columns = COLUMNS.remove(slot);
    if (columns != null) {
      columns.close();
    }
  }

  /** How many rows all slots hold (the tests and the bench read it). */
  public static long heldRows() {
    long n = 0;
    for (Held held : ROWS.values()) {
      n += held.count();
    }
    for (Columns columns : COLUMNS.values()) {
      n += columns.count();
    }
    return n;
  }

  /** A slot's rows: chunks read one after another (a window is one chunk per sample time). */
  public record Held(InternalRow[][] chunks, int count) {
    static final Held NONE = of(new InternalRow[0]);

    Held(InternalRow[][] chunks) {
      this(chunks, total(chunks));
    }

    static Held of(InternalRow[] rows) {
      return new Held(new InternalRow[][] {rows}, rows.length);
    }

    private static int total(InternalRow[][] chunks) {
      long n = 0;
      for (InternalRow[] chunk : chunks) {
        n += chunk.length;
      }
      return Math.toIntExact(n);
    }

    /** The row at {@code index} over all chunks (tests read it; readers walk the chunks). */
    public InternalRow get(int index) {
      int i = index;
      for (InternalRow[] chunk : chunks) {
        if (i < chunk.length) {
          return chunk[i];
        }
        i -= chunk.length;
      }
      throw new IndexOutOfBoundsException(index);
    }
  }

  /** A slot's columns: Arrow record batches, each read as a {@link ColumnarBatch}, in memory of
   * their own allocator (freed by {@link #close}). */
  public static final class Columns implements AutoCloseable {
    static final Columns NONE = new Columns(null, List.of(), 0, 0);

    private final BufferAllocator allocator;
    private final List<VectorSchemaRoot> roots;
    private final int count;
    private final long bytes;

    private Columns(BufferAllocator allocator, List<VectorSchemaRoot> roots, int count, long bytes) {
      this.allocator = allocator;
      this.roots = roots;
      this.count = count;
      this.bytes = bytes;
    }

    static Columns load(String slot, Iterator<byte[]> batches, Schema arrow) {
      BufferAllocator allocator =
          ArrowUtils$.MODULE$.rootAllocator().newChildAllocator("kafka-health " + slot, 0, Long.MAX_VALUE);
      List<VectorSchemaRoot> roots = new ArrayList<>();
      try {
        long rows = 0;
        long bytes = 0;
        while (batches.hasNext()) {
          VectorSchemaRoot root = VectorSchemaRoot.create(arrow, allocator);
          roots.add(root);
          try (ArrowRecordBatch batch = ArrowConverters$.MODULE$.loadBatch(batches.next(), allocator)) {
            new VectorLoader(root).load(batch);
          }
          rows += root.getRowCount();
          for (FieldVector vector : root.getFieldVectors()) {
            bytes += vector.getBufferSize();
          }
        }
        return new Columns(allocator, roots, Math.toIntExact(rows), bytes);
      } catch (RuntimeException | Error e) {
        roots.forEach(VectorSchemaRoot::close);
        allocator.close();
        throw e;
      }
    }

    public int count() {
      return count;
    }

    /** The bytes of its Arrow buffers. */
    public long bytes() {
      return bytes;
    }

    /** Its record batches as Spark reads columns (views over the same buffers). */
    public ColumnarBatch[] batches() {
      ColumnarBatch[] out = new ColumnarBatch[roots.size()];
      for (int i = 0; i < out.length; i++) {
        VectorSchemaRoot root = roots.get(i);
        ColumnVector[] vectors =
            root.getFieldVectors().stream().map(Kept::new).toArray(ColumnVector[]::new);
        out[i] = new ColumnarBatch(vectors, root.getRowCount());
      }
      return out;
    }

    /** A column of the slot as Spark reads it. Spark closes a batch's columns once it has read
     * them ({@code ColumnarBatch.closeIfFreeable}); the slot's are read again every cycle, and
     * freed with the slot ({@link Columns#close}). */
    static final class Kept extends ArrowColumnVector {
      Kept(FieldVector vector) {
        super(vector);
      }

      @Override
      public void close() {}
    }

    @Override
    public void close() {
      if (allocator != null) {
        roots.forEach(VectorSchemaRoot::close);
        allocator.close();
      }
    }
  }
}
