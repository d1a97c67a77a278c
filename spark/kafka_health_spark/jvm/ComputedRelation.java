package io.kafkahealth.spark;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.execution.joins.HashedRelation;
import org.apache.spark.sql.execution.joins.ValueRowWithKeyIndex;

import scala.collection.Iterator;

/**
 * The value of a {@link LocalBroadcastExec}: the hashed rows of one run of the plan, as one
 * class whatever the rows are.
 *
 * <p>Spark generates a broadcast hash join's code from the value its broadcast held when the
 * code was generated: cast to that value's class, and shortened when its keys were unique or it
 * was empty. A local broadcast's rows change from run to run, so its value always says that its
 * keys may repeat and that it may hold rows: the generated code looks every key up, as in any
 * join, and reads this class, which passes each call to the rows of the run.
 */
public final class ComputedRelation implements HashedRelation {
  private final HashedRelation rows;

  public ComputedRelation(HashedRelation rows) {
    this.rows = rows;
  }

  @Override
  public Iterator<InternalRow> get(InternalRow key) {
    return rows.get(key);
  }

  @Override
  public Iterator<InternalRow> get(long key) {
    return rows.get(key);
  }

  @Override
  public InternalRow getValue(InternalRow key) {
    return rows.getValue(key);
  }

  @Override
  public InternalRow getValue(long key) {
    return rows.getValue(key);
  }

  @Override
  public Iterator<ValueRowWithKeyIndex> getWithKeyIndex(InternalRow key) {
    return rows.getWithKeyIndex(key);
  }

  @Override
  public ValueRowWithKeyIndex getValueWithKeyIndex(InternalRow key) {
    return rows.getValueWithKeyIndex(key);
  }

  @Override
  public Iterator<ValueRowWithKeyIndex> valuesWithKeyIndex() {
    return rows.valuesWithKeyIndex();
  }

  @Override
  public int maxNumKeysIndex() {
    return rows.maxNumKeysIndex();
  }

  /** (Whatever this run's rows are: the code generated once serves every run.) */
  @Override
  public boolean keyIsUnique() {
    return false;
  }

  @Override
  public Iterator<InternalRow> keys() {
    return rows.keys();
  }

  @Override
  public ComputedRelation asReadOnlyCopy() {
    return new ComputedRelation(rows.asReadOnlyCopy());
  }

  @Override
  public void close() {
    rows.close();
  }

  @Override
  public long estimatedSize() {
    return rows.estimatedSize();
  }
}
