package io.kafkahealth.spark;

import java.util.ArrayList;
import java.util.List;
import java.util.function.UnaryOperator;

import org.apache.spark.sql.api.java.UDF1;
import org.apache.spark.sql.classic.Dataset;
import org.apache.spark.sql.classic.SparkSession;
import org.apache.spark.sql.catalyst.expressions.Alias;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.AttributeMap;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;
import org.apache.spark.sql.catalyst.expressions.SortOrder;
import org.apache.spark.sql.catalyst.optimizer.CollapseProject$;
import org.apache.spark.sql.catalyst.plans.InnerLike;
import org.apache.spark.sql.execution.ProjectExec;
import org.apache.spark.sql.execution.window.WindowExec;
import org.apache.spark.sql.execution.CoalesceExec;
import org.apache.spark.sql.execution.QueryExecution$;
import org.apache.spark.sql.execution.joins.BroadcastNestedLoopJoinExec;
import org.apache.spark.sql.execution.joins.CartesianProductExec;
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
   * {@link #plan}, or when {@code single}: planned, its nested-loop broadcasts taken out (a
   * broadcast is a job of its own, {@link #withoutBroadcasts}), its projections moved late
   * ({@link #projectLate}), prepared for execution, then {@link #inOnePartition}. (Its joins are
   * shuffled hash joins already: the frames hint them so, with Spark's public join hints.)
   */
  public static SparkPlan plan(Dataset<?> frame, boolean single) {
    if (!single) {
      return plan(frame);
    }
    SparkPlan planned = projectLate(withoutBroadcasts(frame.queryExecution().sparkPlan()));
    QueryExecution$ execution = QueryExecution$.MODULE$;
    SparkPlan prepared =
        execution.prepareForExecution(
            execution.preparations(frame.sparkSession(), Option.empty(), true), planned);
    return inOnePartition(prepared);
  }

  /**
   * {@code plan} with its inner nested loop joins made cartesian products: in one partition, the
   * same join without a job to broadcast a side.
   */
  static SparkPlan withoutBroadcasts(SparkPlan plan) {
    List<SparkPlan> children = mapChildren(plan, Plans::withoutBroadcasts);
    if (plan instanceof BroadcastNestedLoopJoinExec join && join.joinType() instanceof InnerLike) {
      return new CartesianProductExec(children.get(0), children.get(1), join.condition());
    }
    return withChildren(plan, children);
  }

  /**
   * {@code plan} (planned, not yet prepared) with its projections computed only for the rows that
   * are kept: a top k ({@code TakeOrderedAndProjectExec}) takes its rows from below the projections
   * under it and projects the k it keeps (a check's rows format their messages and evidence, and
   * most of a large cluster's are not kept); a window of functions over the whole of its input that
   * read no column (a check's {@code count(1)}, {@code findings.capped}) is computed below the
   * projection under it, so that projection moves up to the top k above. Only deterministic
   * projections move: the rows kept and their values are the same.
   */
  static SparkPlan projectLate(SparkPlan plan) {
    plan = withChildren(plan, mapChildren(plan, Plans::projectLate));
    if (plan instanceof WindowExec window
        && window.partitionSpec().isEmpty()
        && window.orderSpec().isEmpty()
        && CollectionConverters.asJava(window.windowExpression()).stream()
            .allMatch(e -> ((Expression) e).references().isEmpty())) {
      // (each projection of a chain moves up as it is, carrying the window's columns: merged, one
      // could compute a column it shares more than once per row)
      List<ProjectExec> lifted = new ArrayList<>();
      SparkPlan child = window.child();
      while (child instanceof ProjectExec project && deterministic(project)) {
        lifted.add(project);
        child = project.child();
      }
      if (!lifted.isEmpty()) {
        List<Attribute> computed = new ArrayList<>();
        CollectionConverters.asJava(window.windowExpression()).forEach(e -> computed.add(e.toAttribute()));
        SparkPlan moved =
            new WindowExec(window.windowExpression(), window.partitionSpec(), window.orderSpec(), child);
        for (int i = lifted.size() - 1; i >= 0; i--) {
          List<NamedExpression> list = new ArrayList<>(CollectionConverters.asJava(lifted.get(i).projectList()));
          list.addAll(computed);
          moved = new ProjectExec(CollectionConverters.asScala(list).toList(), moved);
        }
        return moved;
      }
    }
    if (plan instanceof TakeOrderedAndProjectExec top && top.child() instanceof ProjectExec) {
      scala.collection.immutable.Seq<NamedExpression> projected = top.projectList();
      List<SortOrder> order = new ArrayList<>(CollectionConverters.asJava(top.sortOrder()));
      SparkPlan child = top.child();
      CollapseProject$ aliases = CollapseProject$.MODULE$;
      while (child instanceof ProjectExec project && deterministic(project)) {
        AttributeMap<Alias> map = aliases.getAliasMap(project.projectList());
        order.replaceAll(o -> (SortOrder) aliases.replaceAlias(o, map));
        projected = aliases.buildCleanedProjectList(projected, project.projectList());
        child = project.child();
      }
      if (child != top.child()) {
        return new TakeOrderedAndProjectExec(
            top.limit(), CollectionConverters.asScala(order).toList(), projected, child, top.offset());
      }
    }
    return plan;
  }

  private static boolean deterministic(ProjectExec project) {
    return CollectionConverters.asJava(project.projectList()).stream().allMatch(e -> ((Expression) e).deterministic());
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
