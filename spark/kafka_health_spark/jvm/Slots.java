package io.kafkahealth.spark;

import java.util.concurrent.ConcurrentHashMap;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.classic.Dataset;
import org.apache.spark.sql.classic.SparkSession;

/**
 * Rows and values kept in the driver JVM under a name, read when a plan runs.
 *
 * <p>A plan built over a slot ({@link SlotSource}) or a parameter ({@link Plans#PARAM_FUNCTION})
 * reads what the slot holds when its tasks run, not what it held when the plan was built: a
 * policy's plans are built and planned once, and each cycle only swaps the rows underneath.
 * Tasks read the registry directly, so this works where executors share the driver's JVM (a
 * local master) and nowhere else.
 */
public final class Slots {
  private static final InternalRow[] NONE = new InternalRow[0];
  private static final ConcurrentHashMap<String, InternalRow[]> ROWS = new ConcurrentHashMap<>();
  private static final ConcurrentHashMap<String, Long> PARAMS = new ConcurrentHashMap<>();

  private Slots() {}

  /** Run {@code rows}'s plan and keep its rows under {@code slot}; returns how many. A plan over
   * a local relation (a frame built from Arrow) is collected without a Spark job. */
  public static int fill(String slot, Dataset<?> rows) {
    InternalRow[] collected = rows.queryExecution().executedPlan().executeCollect();
    ROWS.put(slot, collected);
    return collected.length;
  }

  /** Run {@code plan} and keep its rows under {@code slot}; returns how many. */
  public static int fillFrom(SparkSession session, String slot, PreparedPlan plan) {
    InternalRow[] collected = plan.collect(session);
    ROWS.put(slot, collected);
    return collected.length;
  }

  /** The rows under {@code slot} (none when nothing was filled). */
  public static InternalRow[] rows(String slot) {
    return ROWS.getOrDefault(slot, NONE);
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
  }

  /** How many rows all slots hold (the tests and the bench read it). */
  public static long heldRows() {
    long n = 0;
    for (InternalRow[] r : ROWS.values()) {
      n += r.length;
    }
    return n;
  }
}
