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
import org.apache.spark.sql.catalyst.optimizer.BuildLeft$;
import org.apache.spark.sql.catalyst.optimizer.BuildRight$;
import org.apache.spark.sql.catalyst.optimizer.BuildSide;
import org.apache.spark.sql.catalyst.plans.ExistenceJoin;
import org.apache.spark.sql.catalyst.plans.FullOuter$;
import org.apache.spark.sql.catalyst.plans.InnerLike;
import org.apache.spark.sql.catalyst.plans.JoinType;
import org.apache.spark.sql.catalyst.plans.LeftAnti$;
import org.apache.spark.sql.catalyst.plans.LeftOuter$;
import org.apache.spark.sql.catalyst.plans.LeftSemi$;
import org.apache.spark.sql.catalyst.plans.RightOuter$;
import org.apache.spark.sql.catalyst.plans.logical.Join;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.execution.joins.SortMergeJoinExec;
import org.apache.spark.sql.execution.ProjectExec;
import org.apache.spark.sql.execution.window.WindowExec;
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
import scala.math.BigInt;
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
   * broadcast is a job of its own, {@link #withoutBroadcasts}), its joins hashed
   * ({@link #hashJoins}), its projections moved late ({@link #projectLate}), prepared for
   * execution, then {@link #inOnePartition}.
   */
  public static SparkPlan plan(Dataset<?> frame, boolean single) {
    if (!single) {
      return plan(frame);
    }
    SparkPlan planned = projectLate(hashJoins(withoutBroadcasts(frame.queryExecution().sparkPlan())));
    QueryExecution$ execution = QueryExecution$.MODULE$;
    SparkPlan prepared =
        execution.prepareForExecution(
            execution.preparations(frame.sparkSession(), Option.empty(), true), planned);
    return inOnePartition(prepared);
  }

  /**
   * {@code plan} with its inner nested loop joins made cartesian products: in one partition, the
   * same join without a job to broadcast a side. (Its broadcast hash joins become shuffled hash
   * joins, {@link #hashJoins}.)
   */
  static SparkPlan withoutBroadcasts(SparkPlan plan) {
    List<SparkPlan> children = mapChildren(plan, Plans::withoutBroadcasts);
    if (plan instanceof BroadcastNestedLoopJoinExec join && join.joinType() instanceof InnerLike) {
      return new CartesianProductExec(children.get(0), children.get(1), join.condition());
    }
    return withChildren(plan, children);
  }

  /**
   * {@code plan} (planned, not yet prepared) with its sort-merge joins and broadcast hash joins
   * made shuffled hash joins: in one partition both sides of a sort-merge join are sorted whole
   * before a row comes out, where a hash join hashes one side and streams the other; and a
   * broadcast (from a large cluster's hints) would be a job of its own. An inner join builds its
   * smaller side by the planner's statistics (a slot read with {@code statistics} reports its rows
   * when planned); other joins the side Spark's planner would (the right, the left for a right
   * outer join). A hash join holds its build side in memory, without spilling: at a million
   * partitions measured to fit the chart's driver (docs/diagnostics.md). (A null-aware anti join
   * has no shuffled form: it keeps Spark's broadcast and runs as a job.)
   */
  static SparkPlan hashJoins(SparkPlan plan) {
    List<SparkPlan> children = mapChildren(plan, Plans::hashJoins);
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
    if (plan instanceof SortMergeJoinExec join && !join.isSkewJoin()) {
      BuildSide side = buildSide(join.joinType());
      Option<Join> logical = logical(join);
      boolean leftSmaller =
          logical.isDefined() && size(logical.get().left()).compare(size(logical.get().right())) < 0;
      if (join.joinType() instanceof InnerLike && leftSmaller) {
        side = BuildLeft$.MODULE$;
      }
      if (side != null) {
        return new ShuffledHashJoinExec(
            join.leftKeys(),
            join.rightKeys(),
            join.joinType(),
            side,
            join.condition(),
            children.get(0),
            children.get(1),
            false);
      }
    }
    return withChildren(plan, children);
  }

  /** The logical join {@code join} was planned from, when it says. */
  private static Option<Join> logical(SparkPlan join) {
    Option<LogicalPlan> logical = join.logicalLink();
    return logical.isDefined() && logical.get() instanceof Join sides ? Option.apply(sides) : Option.empty();
  }

  private static BigInt size(LogicalPlan side) {
    return side.stats().sizeInBytes();
  }

  private static BuildSide buildSide(JoinType type) {
    if (type instanceof InnerLike
        || type == LeftOuter$.MODULE$
        || type == LeftSemi$.MODULE$
        || type == LeftAnti$.MODULE$
        || type == FullOuter$.MODULE$
        || type instanceof ExistenceJoin) {
      return BuildRight$.MODULE$;
    }
    if (type == RightOuter$.MODULE$) {
      return BuildLeft$.MODULE$;
    }
    return null;
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
