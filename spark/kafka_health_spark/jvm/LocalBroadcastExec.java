package io.kafkahealth.spark;

import org.apache.spark.Partition;
import org.apache.spark.TaskContext;
import org.apache.spark.broadcast.Broadcast;
import org.apache.spark.rdd.RDD;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.plans.physical.BroadcastMode;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.joins.EmptyHashedRelation$;
import org.apache.spark.sql.execution.joins.HashedRelation;

import scala.Option;
import scala.collection.IterableOnce;
import scala.collection.Iterator;
import scala.runtime.AbstractFunction0;
import scala.collection.immutable.IndexedSeq;
import scala.collection.immutable.Seq;
import scala.reflect.ClassTag$;

/**
 * A broadcast computed where it is read, in the task that reads it: the hashed small side of a
 * broadcast hash join in a plan run in one partition ({@link Plans#inOnePartition}).
 *
 * <p>Spark's broadcast runs a job to collect its side, once, when the plan first runs, and keeps
 * the value: a plan run again over new slots would join with the first cycle's rows. Here each
 * run reads its side again ({@link Computed#getValue}), with no job, so the join is the same as
 * Spark's broadcast hash join (its stream side in the same generated code as the scan before it,
 * where a shuffled hash join reads rows another stage made) over the current rows.
 */
public final class LocalBroadcastExec extends SparkPlan {
  private static final long serialVersionUID = 1L;
  private final BroadcastMode mode;
  private final SparkPlan child;

  public LocalBroadcastExec(BroadcastMode mode, SparkPlan child) {
    this.mode = mode;
    this.child = child;
  }

  public BroadcastMode mode() {
    return mode;
  }

  public SparkPlan child() {
    return child;
  }

  @Override
  public Seq<Attribute> output() {
    return child.output();
  }

  @Override
  public Seq<SparkPlan> children() {
    return scala.jdk.javaapi.CollectionConverters.asScala(java.util.List.of(child)).toList();
  }

  @Override
  public SparkPlan withNewChildrenInternal(IndexedSeq<SparkPlan> children) {
    return new LocalBroadcastExec(mode, children.head());
  }

  @Override
  public RDD<InternalRow> doExecute() {
    throw new UnsupportedOperationException("a broadcast is read as a broadcast (executeBroadcast)");
  }

  @Override
  public <T> Broadcast<T> doExecuteBroadcast() {
    return new Computed<>(mode, child.execute());
  }

  @Override
  public int productArity() {
    return 2;
  }

  @Override
  public Object productElement(int n) {
    return switch (n) {
      case 0 -> mode;
      case 1 -> child;
      default -> throw new IndexOutOfBoundsException(n);
    };
  }

  @Override
  public boolean canEqual(Object that) {
    return that instanceof LocalBroadcastExec;
  }

  /** The value of a broadcast, computed from its side's rows each time it is read. */
  public static final class Computed<T> extends Broadcast<T> {
    private static final long serialVersionUID = 1L;
    private final transient BroadcastMode mode;
    private final transient RDD<InternalRow> rows;

    @SuppressWarnings("unchecked")
    Computed(BroadcastMode mode, RDD<InternalRow> rows) {
      super(-1L, (scala.reflect.ClassTag<T>) ClassTag$.MODULE$.Any());
      this.mode = mode;
      this.rows = rows;
    }

    /** The side's rows, computed in the reading task (a plan's run, never a job of its own), as
     * a {@link ComputedRelation}; outside a task (Spark generating the join's code), none. */
    @Override
    @SuppressWarnings("unchecked")
    public T getValue() {
      TaskContext context = TaskContext.get();
      if (context == null) {
        return (T) new ComputedRelation(EmptyHashedRelation$.MODULE$);
      }
      // (hashed as they are read, partition after partition: the relation copies what it keeps)
      Iterator<InternalRow> read = scala.collection.Iterator$.MODULE$.empty();
      for (Partition partition : rows.partitions()) {
        read = read.concat(new AbstractFunction0<IterableOnce<InternalRow>>() {
          @Override
          public IterableOnce<InternalRow> apply() {
            return rows.iterator(partition, context);
          }
        });
      }
      return (T) new ComputedRelation((HashedRelation) mode.transform(read, Option.empty()));
    }

    @Override
    public void doUnpersist(boolean blocking) {}

    @Override
    public void doDestroy(boolean blocking) {}
  }
}
