package io.kafkahealth.spark;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.spark.NarrowDependency;
import org.apache.spark.Partition;
import org.apache.spark.SparkEnv;
import org.apache.spark.TaskContext;
import org.apache.spark.TaskContextImpl;
import org.apache.spark.executor.TaskMetrics;
import org.apache.spark.memory.TaskMemoryManager;
import org.apache.spark.rdd.RDD;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.plans.logical.LocalRelation;
import org.apache.spark.sql.classic.Dataset;
import org.apache.spark.sql.classic.SparkSession;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.adaptive.AdaptiveSparkPlanExec;
import org.apache.spark.sql.execution.datasources.v2.BatchScanExec;
import org.apache.spark.sql.execution.exchange.Exchange;

import scala.Option;
import scala.collection.Iterator;
import scala.jdk.javaapi.CollectionConverters;
import scala.runtime.AbstractFunction0;

/**
 * A planned plan, made ready to run again and again.
 *
 * <p>A plan with no exchange ({@link Plans#inOnePartition}) and no subquery is prepared once into
 * its RDD: every stage of it is narrow, so running that RDD again computes it again from the slots
 * it reads (their rows are read when a partition is computed), with the code generated and the
 * closures cleaned once. Its partitions are computed in the calling thread, each in a task context
 * of its own, as a local executor would but without scheduling a job, serializing its closure and
 * its result, or queueing behind other jobs' tasks. Any other plan is run as Spark jobs, a copy of
 * it each time: a planned plan keeps its shuffles' outputs, and run again as is it would return
 * the rows of its first run.
 */
public final class PreparedPlan {
  // Ids of the task contexts made here: far above those the scheduler hands out, and unique, as
  // the memory manager keys what a task holds by its id.
  private static final AtomicLong TASK_IDS = new AtomicLong(Long.MAX_VALUE / 2);

  private final SparkPlan template;
  private final RDD<InternalRow> rdd; // null: copied and run as a job each time
  private final List<TaskContextImpl> running = new ArrayList<>();
  private String interrupted; // (guarded by running) once set, every run fails at its first row

  private PreparedPlan(SparkPlan template, RDD<InternalRow> rdd) {
    this.template = template;
    this.rdd = rdd;
  }

  /** {@code template} prepared into its RDD when {@code rerun} and it can be, else kept as is. */
  public static PreparedPlan of(SparkSession session, SparkPlan template, boolean rerun) {
    if (rerun && rerunnable(template)) {
      RDD<InternalRow> rdd = Plans.copy(session, template).execute();
      if (narrow(rdd)) {
        return new PreparedPlan(template, rdd);
      }
    }
    return new PreparedPlan(template, null);
  }

  /** The slots the plan reads ({@link SlotSource}): a plan over a slot another plan fills waits
   * for that plan. */
  public String[] slots() {
    java.util.Set<String> found = new java.util.TreeSet<>();
    slotsOf(template, found);
    return found.toArray(new String[0]);
  }

  private static void slotsOf(SparkPlan plan, java.util.Set<String> found) {
    if (plan instanceof BatchScanExec scan && scan.scan() instanceof SlotSource.SlotScan slot) {
      found.add(slot.slot());
    }
    if (plan instanceof AdaptiveSparkPlanExec adaptive) {
      slotsOf(adaptive.executedPlan(), found);
    }
    for (SparkPlan child : CollectionConverters.asJava(plan.children())) {
      slotsOf(child, found);
    }
    for (SparkPlan subquery : CollectionConverters.asJava(plan.subqueries())) {
      slotsOf(subquery, found);
    }
  }

  /** The physical plan it runs, as Spark prints it (for benches and debugging). */
  public String describe() {
    return template.toString();
  }

  /** Whether it runs as its prepared RDD, without a job. */
  public boolean reused() {
    return rdd != null;
  }

  /** No exchange (its outputs would be kept from the first run) and no subquery (its value is
   * computed into the plan when the plan is made into an RDD). */
  static boolean rerunnable(SparkPlan plan) {
    if (plan instanceof Exchange || !plan.subqueries().isEmpty()) {
      return false;
    }
    for (SparkPlan child : CollectionConverters.asJava(plan.children())) {
      if (!rerunnable(child)) {
        return false;
      }
    }
    return true;
  }

  static boolean narrow(RDD<?> rdd) {
    for (Object dep : CollectionConverters.asJava(rdd.dependencies())) {
      if (!(dep instanceof NarrowDependency<?> narrow) || !narrow(narrow.rdd())) {
        return false;
      }
    }
    return true;
  }

  /** The plan's rows of now. */
  public InternalRow[] collect(SparkSession session) {
    if (rdd == null) {
      return Plans.copy(session, template).executeCollect();
    }
    List<InternalRow> rows = new ArrayList<>();
    Partition[] partitions = rdd.partitions();
    for (Partition partition : partitions) {
      compute(partition, partitions.length, rows);
    }
    return rows.toArray(new InternalRow[0]);
  }

  /** The plan's rows of now, as a local frame (collecting it runs no job). */
  public Dataset<org.apache.spark.sql.Row> run(SparkSession session) {
    InternalRow[] rows = collect(session);
    LocalRelation relation =
        new LocalRelation(
            template.output(),
            CollectionConverters.asScala(Arrays.asList(rows)).toSeq(),
            false,
            Option.empty());
    return Dataset.ofRows(session, relation);
  }

  /** Stop the partitions computing now (a cancelled cycle), each at its next row, and every later
   * run at its first: a plan interrupted is not run again. */
  public void interrupt(String reason) {
    synchronized (running) {
      interrupted = reason;
      running.forEach(context -> context.markInterrupted(reason));
    }
  }

  private void compute(Partition partition, int partitions, List<InternalRow> rows) {
    SparkEnv env = SparkEnv.get();
    long id = TASK_IDS.getAndIncrement();
    TaskMemoryManager memory = new TaskMemoryManager(env.memoryManager(), id);
    TaskContextImpl context =
        new TaskContextImpl(
            0,
            0,
            partition.index(),
            id,
            0,
            partitions,
            memory,
            new Properties(),
            env.metricsSystem(),
            TaskMetrics.empty(),
            scala.math.BigDecimal$.MODULE$.apply(1),
            scala.collection.immutable.Map$.MODULE$.empty());
    synchronized (running) {
      if (interrupted != null) {
        context.markInterrupted(interrupted);
      }
      running.add(context);
    }
    try {
      TaskContext.withTaskContext(
          context,
          new AbstractFunction0<Void>() {
            @Override
            public Void apply() {
              // (completion listeners read the task context: they run inside it)
              try {
                Iterator<InternalRow> it = rdd.iterator(partition, context);
                while (it.hasNext()) {
                  context.killTaskIfInterrupted();
                  rows.add(it.next().copy());
                }
              } catch (RuntimeException | Error e) {
                context.markTaskFailed(e);
                try {
                  context.markTaskCompleted(Option.apply(e));
                } catch (RuntimeException | Error also) {
                  e.addSuppressed(also);
                }
                throw e;
              }
              context.markTaskCompleted(Option.empty());
              return null;
            }
          });
    } finally {
      synchronized (running) {
        running.remove(context);
      }
      memory.cleanUpAllAllocatedMemory();
      env.memoryManager().releaseAllExecutionMemoryForTask(id);
    }
  }
}
