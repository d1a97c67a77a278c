package io.kafkahealth.spark;

import java.util.ArrayList;
import java.util.List;
import java.util.function.UnaryOperator;

import org.apache.spark.sql.api.java.UDF1;
import org.apache.spark.sql.classic.Dataset;
import org.apache.spark.sql.classic.SparkSession;
import org.apache.spark.sql.catalyst.plans.InnerLike;
import org.apache.spark.sql.execution.CoalesceExec;
import org.apache.spark.sql.execution.QueryExecution$;
import org.apache.spark.sql.execution.joins.BroadcastHashJoinExec;
import org.apache.spark.sql.execution.joins.BroadcastNestedLoopJoinExec;
import org.apache.spark.sql.execution.joins.CartesianProductExec;
import org.apache.spark.sql.execution.joins.ShuffledHashJoinExec;
import org.apache.spark.sql.execution.CollectLimitExec;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.TakeOrderedAndProjectExec;
import org.apache.spark.sql.execution.exchange.ShuffleExchangeExec;
import org.apache.spark.sql.expressions.UserDefinedFunction;
import org.apache.spark.sql.functions;
import org.apache.spark.sql.types.DataTypes;

import scala.Option;
import scala.jdk.javaapi.CollectionConverters;

/** Plans planned once, to be run again ({@link PreparedPlan}). */
public final class Plans {
  /** SQL function {@code kafka_health_param(name)}: a {@link Slots} parameter, read per row when
   * the plan runs. A UDF is never foldable, so the optimizer does not evaluate it into the plan;
   * it stays deterministic (one value per run), so it may appear inside aggregates. */
  public static final String PARAM_FUNCTION = "kafka_health_param";

  private Plans() {}

  /** Register {@link #PARAM_FUNCTION} in {@code session} (idempotent). */
  public static void register(SparkSession session) {
    UserDefinedFunction param =
        functions.udf((UDF1<String, Long>) Slots::param, DataTypes.LongType);
    session.udf().register(PARAM_FUNCTION, param);
  }

  /** The physical plan of {@code frame}, planned now (optimized, planned, code not generated). */
  public static SparkPlan plan(Dataset<?> frame) {
    return frame.queryExecution().executedPlan();
  }

  /**
   * {@link #plan}, or when {@code single}: planned, its broadcasts taken out (a broadcast is a job
   * of its own, {@link #withoutBroadcasts}), prepared for execution, then {@link #inOnePartition}.
   */
  public static SparkPlan plan(Dataset<?> frame, boolean single) {
    if (!single) {
      return plan(frame);
    }
    SparkPlan planned = withoutBroadcasts(frame.queryExecution().sparkPlan());
    QueryExecution$ execution = QueryExecution$.MODULE$;
    SparkPlan prepared =
        execution.prepareForExecution(
            execution.preparations(frame.sparkSession(), Option.empty(), true), planned);
    return inOnePartition(prepared);
  }

  /**
   * {@code plan} with its inner nested loop joins made cartesian products, and its broadcast hash
   * joins (a large cluster's frames hint their small sides to broadcast) made shuffled hash joins
   * with the same build side: in one partition, where the shuffles become coalesces, the same
   * hash join without a job to broadcast its build side.
   */
  static SparkPlan withoutBroadcasts(SparkPlan plan) {
    List<SparkPlan> children = mapChildren(plan, Plans::withoutBroadcasts);
    if (plan instanceof BroadcastNestedLoopJoinExec join && join.joinType() instanceof InnerLike) {
      return new CartesianProductExec(children.get(0), children.get(1), join.condition());
    }
    if (plan instanceof BroadcastHashJoinExec join && !join.isNullAwareAntiJoin()) {
      return new ShuffledHashJoinExec(
          join.leftKeys(),
          join.rightKeys(),
          join.joinType(),
          join.buildSide(),
          join.condition(),
          children.get(0),
          children.get(1),
          false);
    }
    return withChildren(plan, children);
  }

  /**
   * {@code plan} with each shuffle replaced by a coalesce into one partition: every operator that
   * asks for a distribution (an aggregate, a join, a window, a global sort) gets all its rows in one
   * partition, which satisfies any distribution, and the plan runs as one stage with no shuffle
   * written or read. For small inputs, where a stage's fixed cost outweighs its rows, read in one
   * partition each.
   */
  public static SparkPlan inOnePartition(SparkPlan plan) {
    if (plan instanceof ShuffleExchangeExec shuffle) {
      return new CoalesceExec(1, inOnePartition(shuffle.child()));
    }
    List<SparkPlan> children = mapChildren(plan, Plans::inOnePartition);
    if (plan instanceof TakeOrderedAndProjectExec || plan instanceof CollectLimitExec) {
      // (these shuffle their child's rows into one partition themselves when it has more, as a
      // union has: one per side)
      children.set(0, new CoalesceExec(1, children.get(0)));
    }
    return withChildren(plan, children);
  }

  private static List<SparkPlan> mapChildren(SparkPlan plan, UnaryOperator<SparkPlan> rewrite) {
    List<SparkPlan> children = new ArrayList<>();
    CollectionConverters.asJava(plan.children()).forEach(child -> children.add(rewrite.apply(child)));
    return children;
  }

  private static SparkPlan withChildren(SparkPlan plan, List<SparkPlan> children) {
    return children.isEmpty() ? plan : plan.withNewChildren(CollectionConverters.asScala(children).toSeq());
  }

  /** A fresh copy of {@code template}, made with {@code session} active in this thread: each
   * node of a plan keeps the session active when it was made, and runs its jobs with it. */
  public static SparkPlan copy(SparkSession session, SparkPlan template) {
    SparkSession.setActiveSession(session);
    return template.clone();
  }
}
