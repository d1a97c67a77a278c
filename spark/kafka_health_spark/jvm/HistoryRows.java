package io.kafkahealth.spark;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.TreeMap;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.classic.Dataset;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * One cluster's history windows, kept in the driver JVM as rows between cycles: each sample
 * table as one chunk of rows per sample time, and partition_state as what the checks read of it,
 * its transitions (each record beside the record before it of the same partition, one chunk per
 * time) and each partition's newest record, which the next records are paired with.
 *
 * <p>A cycle appends the rows the history store wrote (built from Arrow: no Spark job), drops the
 * chunks that fell out of the span, and fills each window's slot ({@link Slots#put}) with the
 * chunks of its bounds, shared, not copied: no job, no plan, nothing generated per cycle. Rows
 * are read from Parquet only when {@code load*} is called (the first cycle, after maintenance,
 * after new spans). Owned by one policy's worker; each method holds the instance's lock.
 */
public final class HistoryRows {
  private final Map<String, TreeMap<Long, InternalRow[]>> tables = new HashMap<>();
  private final TreeMap<Long, InternalRow[]> transitions = new TreeMap<>();
  private final Map<Partition, InternalRow> latest = new HashMap<>();
  private StructType records; // partition_state's schema (as its rows were read)
  private UnsafeProjection compact; // a transition as one UnsafeRow: one object, not ten

  private record Partition(UTF8String topic, int partition) {}

  /** Replace {@code table}'s rows with those of {@code rows} (a Parquet read: Spark jobs). */
  public synchronized int load(String table, Dataset<?> rows) {
    TreeMap<Long, InternalRow[]> chunks = byTime(collect(rows), rows.schema().fieldIndex("ts"));
    tables.put(table, chunks);
    return count(chunks.values());
  }

  /** Add {@code rows} (the rows of one sample time, as written: {@link Slots#fromArrow}), whose
   * time is column {@code ts}. */
  public synchronized int append(String table, InternalRow[] rows, int ts) {
    TreeMap<Long, InternalRow[]> chunks = tables.computeIfAbsent(table, t -> new TreeMap<>());
    byTime(rows, ts).forEach((time, chunk) -> chunks.merge(time, chunk, HistoryRows::concat));
    return rows.length;
  }

  /** Drop {@code table}'s rows older than {@code oldest} (micros since the epoch). */
  public synchronized void trim(String table, long oldest) {
    TreeMap<Long, InternalRow[]> chunks = tables.get(table);
    if (chunks != null) {
      chunks.headMap(oldest, false).clear();
    }
  }

  /**
   * Replace partition_state's transitions and newest records with those of {@code rows} (its
   * records of the span, from Parquet): each record beside the one before it of its partition,
   * kept from {@code since} on, and each partition's newest record.
   */
  public synchronized int loadPartitionState(Dataset<?> rows, long since) {
    records = rows.schema();
    StructType transitionSchema =
        records
            .add("prev_ts", type(records.fieldIndex("ts")))
            .add("prev_leader", type(records.fieldIndex("leader")))
            .add("prev_isr", type(records.fieldIndex("isr")));
    compact = UnsafeProjection.create(transitionSchema);
    int ts = records.fieldIndex("ts");
    InternalRow[] all = collect(rows);
    int topic = records.fieldIndex("topic");
    int partition = records.fieldIndex("partition");
    Arrays.sort(
        all,
        Comparator.comparing((InternalRow r) -> r.getUTF8String(topic))
            .thenComparingInt(r -> r.getInt(partition))
            .thenComparingLong(r -> r.getLong(ts)));
    transitions.clear();
    latest.clear();
    List<InternalRow> paired = new ArrayList<>();
    InternalRow before = null;
    for (InternalRow record : all) {
      Partition key = key(record);
      if (before != null && key(before).equals(key) && record.getLong(ts) >= since) {
        paired.add(transition(record, before));
      }
      latest.put(key, record);
      before = record;
    }
    transitions.putAll(byTime(paired.toArray(new InternalRow[0]), ts));
    return paired.size();
  }

  /** Pair {@code added} (partition_state records of one time, as written) with each partition's
   * newest record so far, keep the pairs as transitions, and make them the newest. */
  public synchronized int recordPartitionState(InternalRow[] added) {
    if (records == null) {
      throw new IllegalStateException("partition_state is not loaded: loadPartitionState first");
    }
    List<InternalRow> paired = new ArrayList<>();
    for (InternalRow record : added) {
      InternalRow before = latest.put(key(record), record);
      if (before != null) {
        paired.add(transition(record, before));
      }
    }
    byTime(paired.toArray(new InternalRow[0]), records.fieldIndex("ts"))
        .forEach((ts, chunk) -> transitions.merge(ts, chunk, HistoryRows::concat));
    return paired.size();
  }

  /** Drop the transitions older than {@code oldest}, and the newest records older than
   * {@code oldestRecord} (no transition in the window could pair with them). */
  public synchronized void trimPartitionState(long oldest, long oldestRecord) {
    transitions.headMap(oldest, false).clear();
    if (records != null) {
      int ts = records.fieldIndex("ts");
      latest.values().removeIf(r -> r.getLong(ts) < oldestRecord);
    }
  }

  /** Fill {@code slot} with {@code table}'s rows with {@code since <= ts < until}, then the rows
   * of {@code current} (a slot: the snapshot's own sample) when not null; returns how many. */
  public synchronized int fill(String slot, String table, long since, long until, String current) {
    TreeMap<Long, InternalRow[]> chunks = tables.getOrDefault(table, new TreeMap<>());
    List<InternalRow[]> rows = new ArrayList<>(range(chunks, since, until).values());
    if (current != null) {
      rows.addAll(Arrays.asList(Slots.rows(current).chunks()));
    }
    return Slots.put(slot, rows);
  }

  /** Fill {@code slot} with the transitions with {@code since <= ts < until} whose record before
   * lies at or after {@code priorSince}; returns how many. */
  public synchronized int fillTransitions(String slot, long since, long until, long priorSince) {
    List<InternalRow[]> rows = new ArrayList<>();
    int prior = records == null ? -1 : records.length(); // prev_ts follows the record's columns
    for (InternalRow[] chunk : range(transitions, since, until).values()) {
      int kept = 0;
      for (InternalRow r : chunk) {
        kept += r.getLong(prior) >= priorSince ? 1 : 0;
      }
      if (kept == chunk.length) {
        rows.add(chunk);
      } else if (kept > 0) {
        InternalRow[] some = new InternalRow[kept];
        int i = 0;
        for (InternalRow r : chunk) {
          if (r.getLong(prior) >= priorSince) {
            some[i++] = r;
          }
        }
        rows.add(some);
      }
    }
    return Slots.put(slot, rows);
  }

  /** How many rows are kept (tables, transitions and newest records; the tests and bench read it). */
  public synchronized long heldRows() {
    long n = count(transitions.values()) + latest.size();
    for (TreeMap<Long, InternalRow[]> chunks : tables.values()) {
      n += count(chunks.values());
    }
    return n;
  }

  /** Forget every row. */
  public synchronized void clear() {
    tables.clear();
    transitions.clear();
    latest.clear();
    records = null;
    compact = null;
  }

  // ------------------------------------------------------------------ internals
  private static InternalRow[] collect(Dataset<?> rows) {
    return Slots.collect(rows);
  }

  private static NavigableMap<Long, InternalRow[]> range(TreeMap<Long, InternalRow[]> chunks, long since, long until) {
    return since >= until ? new TreeMap<>() : chunks.subMap(since, true, until, false);
  }

  private Partition key(InternalRow record) {
    return new Partition(record.getUTF8String(records.fieldIndex("topic")), record.getInt(records.fieldIndex("partition")));
  }

  /** {@code record}'s columns, then the time, leader and ISR of {@code before} (TRANSITIONS_SCHEMA). */
  private InternalRow transition(InternalRow record, InternalRow before) {
    int n = records.length();
    Object[] values = new Object[n + 3];
    for (int i = 0; i < n; i++) {
      values[i] = record.get(i, type(i));
    }
    values[n] = before.get(records.fieldIndex("ts"), type(records.fieldIndex("ts")));
    values[n + 1] = before.get(records.fieldIndex("leader"), type(records.fieldIndex("leader")));
    values[n + 2] = before.get(records.fieldIndex("isr"), type(records.fieldIndex("isr")));
    return compact.apply(new GenericInternalRow(values)).copy();
  }

  private DataType type(int i) {
    return records.fields()[i].dataType();
  }

  private static TreeMap<Long, InternalRow[]> byTime(InternalRow[] rows, int ts) {
    Map<Long, List<InternalRow>> grouped = new HashMap<>();
    for (InternalRow r : rows) {
      grouped.computeIfAbsent(r.getLong(ts), t -> new ArrayList<>()).add(r);
    }
    TreeMap<Long, InternalRow[]> chunks = new TreeMap<>();
    grouped.forEach((t, rs) -> chunks.put(t, rs.toArray(new InternalRow[0])));
    return chunks;
  }

  private static InternalRow[] concat(InternalRow[] a, InternalRow[] b) {
    InternalRow[] both = Arrays.copyOf(a, a.length + b.length);
    System.arraycopy(b, 0, both, a.length, b.length);
    return both;
  }

  private static int count(Iterable<InternalRow[]> chunks) {
    long n = 0;
    Iterator<InternalRow[]> it = chunks.iterator();
    while (it.hasNext()) {
      n += it.next().length;
    }
    return Math.toIntExact(n);
  }
}
