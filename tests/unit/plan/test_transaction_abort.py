"""`judge_abort`: only a hanging transaction is aborted, the rules in their order, every branch."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from kafka_health.models.snapshot import OpenTransaction
from kafka_health.plan.transaction_abort import AbortRefusal, abort_target, judge_abort

NOW = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)
TIMEOUT = timedelta(minutes=15)


def txn(
    start: int = 40,
    *,
    partition: int = 0,
    listed: bool = False,
    txn_id: str | None = None,
    silent: timedelta = timedelta(minutes=30),
    coordinator_epoch: int = -1,
) -> OpenTransaction:
    return OpenTransaction(
        topic="orders",
        partition=partition,
        producer_id=7,
        producer_epoch=2,
        coordinator_epoch=coordinator_epoch,
        start_offset=start,
        last_timestamp=NOW - silent,
        transactional_id=txn_id,
        coordinator_state="Ongoing" if txn_id else None,
        coordinator_lists_partition=listed,
    )


def judge(
    rows: list[OpenTransaction], start: int = 40, timeout: timedelta = TIMEOUT
) -> tuple[AbortRefusal | None, str]:
    verdict = judge_abort(rows, "orders", 0, start, now=NOW, timeout=timeout)
    assert verdict.allowed == (verdict.refusal is None)
    return verdict.refusal, verdict.reason


def test_a_hanging_transaction_is_allowed_and_says_why() -> None:
    assert judge([txn()]) == (
        None,
        "hanging: producer 7 (epoch 2), last heard from 30 min ago, no transactional id lists it",
    )
    refusal, reason = judge([txn(txn_id="app-1")])
    assert refusal is None and "its coordinator's transaction app-1 does not include orders-0" in reason


@pytest.mark.parametrize(
    ("rows", "start", "refusal", "said"),
    [
        ([], 40, AbortRefusal.NOT_FOUND, "(none is open there)"),
        ([txn(40), txn(90)], 41, AbortRefusal.NOT_FOUND, "(open ones start at 40, 90)"),
        ([txn(40, partition=1)], 40, AbortRefusal.NOT_FOUND, "none is open there"),  # another partition
        ([txn(listed=True, txn_id="app-1")], 40, AbortRefusal.NOT_HANGING, "transactional id app-1, Ongoing"),
        ([txn(silent=timedelta(minutes=5))], 40, AbortRefusal.TOO_RECENT, "last heard from 300 s ago"),
        ([txn(silent=TIMEOUT)], 40, AbortRefusal.TOO_RECENT, "within the transaction timeout (15 min)"),
    ],
)
def test_each_refusal(rows: list[OpenTransaction], start: int, refusal: AbortRefusal, said: str) -> None:
    got, reason = judge(rows, start)
    assert got is refusal and said in reason, reason


def test_the_rules_apply_in_order_and_a_zero_timeout_leaves_the_silence_rule_out() -> None:
    # Listed by its coordinator and recent: "not hanging" is the reason given, not "too recent".
    assert judge([txn(listed=True, txn_id="a", silent=timedelta(0))])[0] is AbortRefusal.NOT_HANGING
    assert judge([txn(silent=timedelta(seconds=3))], timeout=timedelta(0))[0] is None


@pytest.mark.parametrize(("seen", "sent"), [(-1, 0), (0, 0), (5, 5)])
def test_the_abort_marker_carries_a_coordinator_epoch_no_leader_refuses(seen: int, sent: int) -> None:
    target = abort_target(txn(coordinator_epoch=seen))
    assert (target.topic, target.partition, target.producer_id, target.producer_epoch) == ("orders", 0, 7, 2)
    assert target.coordinator_epoch == sent
