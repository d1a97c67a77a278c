"""Rolling restart with dedicated KRaft controllers (issue 11 §3): the order (controllers first,
followers by id, the active controller last of them, then the brokers as before), the quorum
gate before each controller, the URP/ISR rules not applied to a node without partitions, and
when a restarted controller counts as back. Exhaustive over small clusters."""

from __future__ import annotations

import itertools
from datetime import timedelta

import pytest

from kafka_health.models.policy import KafkaHealthPolicySpec
from kafka_health.models.snapshot import ClusterSnapshot, Quorum, QuorumVoter
from kafka_health.plan.planner import plan
from kafka_health.plan.restart_safety import (
    check_restart_safety,
    controller_only_nodes,
    describe_order,
    order_brokers,
    roll_plan,
    roll_role,
    voter_caught_up,
    voter_rejoined,
)

from .factories import NOW, balanced, context, partition, snapshot, spec

BROKERS = (1, 2, 3)
CONTROLLERS = (100, 101, 102)


def rules(snap: ClusterSnapshot, node: int, remaining: list[int] | None = None) -> set[str]:
    result = check_restart_safety(snap, node, remaining=remaining if remaining is not None else [node])
    return {b.rule for b in result.blockers}


def dedicated(
    *, leader: int | None = 101, lag: dict[int, int | None] | None = None, **kw: object
) -> ClusterSnapshot:
    return snapshot(brokers=BROKERS, voters=CONTROLLERS, controller=leader, voter_lag=lag, **kw)


# --- who is a controller ----------------------------------------------------------------------


def test_controller_only_nodes_are_the_voters_not_registered_as_brokers() -> None:
    assert controller_only_nodes(dedicated()) == set(CONTROLLERS)
    assert controller_only_nodes(snapshot()) == set()  # combined: every voter is a broker
    assert controller_only_nodes(snapshot(quorum=False)) == set()
    # a fenced combined node stays registered: still a broker, not a controller-only node
    assert controller_only_nodes(snapshot(down=[2])) == set()


def test_roles() -> None:
    snap = dedicated(leader=101)
    assert [roll_role(snap, n) for n in (100, 101, 1)] == ["controller", "active controller", "broker"]
    combined = snapshot(
        brokers=(1, 2, 3, 4), voters=(1, 2, 3), controller=2, partitions=balanced(brokers=(1, 2, 3, 4))
    )
    assert [roll_role(combined, n) for n in (4, 1, 2)] == ["broker", "voter", "active voter"]


# --- the order ----------------------------------------------------------------------------------


@pytest.mark.parametrize("leader", [None, *CONTROLLERS])
@pytest.mark.parametrize("size", range(1, 7))
def test_order_controllers_first_active_last_of_them_then_brokers_for_every_subset(
    leader: int | None, size: int
) -> None:
    snap = dedicated(leader=leader)
    for nodes in itertools.combinations([*CONTROLLERS, *BROKERS], size):
        for shuffled in {nodes, tuple(reversed(nodes))}:
            order = order_brokers(snap, shuffled)
            controllers = [n for n in order if n in CONTROLLERS]
            followers = sorted(n for n in nodes if n in CONTROLLERS and n != leader)
            expected = (
                followers + ([leader] if leader in nodes else []) + sorted(n for n in nodes if n in BROKERS)
            )
            assert order == expected
            assert order[: len(controllers)] == controllers  # no broker before a controller


def test_order_with_dedicated_controllers_and_combined_voters_is_grouped_in_five_ranks() -> None:
    # not a layout Kafka recommends, but the ranks must still hold: 100 controller-only, 1 and 2
    # combined voters (2 active), 3 a plain broker
    snap = snapshot(brokers=BROKERS, voters=(100, 1, 2), controller=2)
    assert order_brokers(snap, [2, 3, 1, 100]) == [100, 3, 1, 2]
    snap = snapshot(brokers=BROKERS, voters=(100, 101, 1), controller=100)
    assert order_brokers(snap, [1, 2, 100, 101, 3]) == [101, 100, 2, 3, 1]


def test_combined_order_unchanged_non_voters_then_voters_active_last() -> None:
    snap = snapshot(
        brokers=(1, 2, 3, 4, 5), voters=(1, 2, 3), controller=2, partitions=balanced(brokers=(1, 2, 3, 4, 5))
    )
    assert order_brokers(snap, [5, 2, 1, 3, 4]) == [4, 5, 1, 3, 2]


def test_roll_plan_says_why_each_node_stands_where_it_does() -> None:
    plan = roll_plan(dedicated(leader=100), [1, 2, 3, 100, 101, 102])
    assert [(s.node, s.role) for s in plan] == [
        (101, "controller"),
        (102, "controller"),
        (100, "active controller"),
        (1, "broker"),
        (2, "broker"),
        (3, "broker"),
    ]
    assert "controllers first" in plan[0].why and "quorum gate" in plan[0].why
    assert "last of the controllers" in plan[2].why
    assert "after the controllers" in plan[3].why
    assert (
        describe_order(dedicated(leader=100), [100, 1, 101])
        == "101 (controller), 100 (active controller), 1 (broker)"
    )


# --- the gate before a controller ---------------------------------------------------------------

LAGS = (0, 100, 101, None)


@pytest.mark.parametrize("leader", CONTROLLERS)
@pytest.mark.parametrize("candidate", CONTROLLERS)
def test_quorum_gate_exhaustive(leader: int, candidate: int) -> None:
    """Safe exactly when the OTHER caught-up voters (the leader always is) are a majority (2 of 3)."""
    followers = [c for c in CONTROLLERS if c != leader]
    for lags in itertools.product(LAGS, repeat=len(followers)):
        lag = dict(zip(followers, lags, strict=True))
        snap = dedicated(leader=leader, lag=lag)
        caught = {c for c in CONTROLLERS if c == leader or (lag.get(c) is not None and lag[c] <= 100)}
        got = rules(snap, candidate)
        assert ("quorum" in got) == (len(caught - {candidate}) < 2), (leader, candidate, lag, got)
        assert got <= {"quorum"}  # nothing else: no URP/ISR rule, no unknown broker


def test_quorum_gate_uses_last_caught_up_when_the_lag_is_unknown() -> None:
    base = dedicated(leader=100)
    taken = int(NOW.timestamp() * 1000)
    quorum = Quorum(
        leader_id=100,
        voters=[
            QuorumVoter(id=100, lag=0),
            QuorumVoter(id=101, lag=None, last_caught_up_ms=taken - 1_000),
            QuorumVoter(id=102, lag=None, last_caught_up_ms=taken - 60_000),
        ],
    )
    snap = base.model_copy(update={"quorum": quorum})
    assert voter_caught_up(quorum.voters[1], snap, max_lag=100, max_lag_ms=5_000)
    assert not voter_caught_up(quorum.voters[2], snap, max_lag=100, max_lag_ms=5_000)
    assert "quorum" not in rules(snap, 102)  # 100 and 101 remain
    assert "quorum" in rules(snap, 101)  # only 100 would remain


def test_no_leader_or_unknown_quorum_blocks_a_controller() -> None:
    assert "quorum" in rules(dedicated(leader=None), 100)
    # unknown quorum: the node cannot even be told a controller
    assert {"quorum_unknown", "unknown_broker"} <= rules(dedicated(quorum=False), 100)


def test_urp_isr_and_min_isr_rules_do_not_apply_to_a_controller_only_node() -> None:
    parts = [
        partition("orders", 0, [1, 2, 3], isr=[1], leader=1),  # under min ISR, URP
        partition("orders", 1, [1, 2, 3], isr=[1, 2], leader=1),  # at min ISR
        partition("single", 0, [2], isr=[2], leader=2),  # RF <= min ISR
        partition("gone", 0, [3], isr=[], leader=None),  # offline
    ]
    snap = dedicated(partitions=parts, min_isr={"orders": 2, "single": 1, "gone": 1})
    result = check_restart_safety(snap, 100, remaining=[100], refuse_never_safe=True)
    assert result.safe and not result.skipped
    assert {"offline", "under_replicated", "min_isr"} <= rules(snap, 1)  # a broker still is refused


def test_one_at_a_time_applies_to_a_controller() -> None:
    assert "one_at_a_time" in rules(dedicated(down=[2]), 100)


def test_active_controller_last_of_the_controllers_not_of_the_brokers() -> None:
    snap = dedicated(leader=101)
    assert "controller_last" in rules(snap, 101, [101, 100, 1, 2, 3])
    assert "controller_last" in rules(snap, 101, [101, 102])
    assert "controller_last" not in rules(snap, 101, [101, 1, 2, 3])  # brokers come after it
    assert check_restart_safety(snap, 101, remaining=[101, 1, 2, 3]).safe
    message = check_restart_safety(snap, 101, remaining=[101, 102, 1]).summary()
    assert "last of the controllers" in message and "102" in message and ", 1" not in message


def test_combined_active_controller_still_goes_last_of_all() -> None:
    snap = snapshot()  # combined 1,2,3, controller 3 (factories.CONTROLLER)
    leader = snap.quorum.leader_id if snap.quorum else None
    assert leader is not None
    others = [b for b in BROKERS if b != leader]
    assert "controller_last" in rules(snap, leader, [leader, others[0]])
    assert check_restart_safety(snap, leader, remaining=[leader]).safe


def test_a_whole_roll_passes_the_gate_at_every_step_when_healthy() -> None:
    """Walk the roll as the executor does (order recomputed, the first checked against the rest)."""
    snap = dedicated(leader=102)
    remaining = [*BROKERS, *CONTROLLERS]
    walked = []
    while remaining:
        order = order_brokers(snap, remaining)
        result = check_restart_safety(snap, order[0], remaining=order)
        assert result.safe, result.summary()
        walked.append(order[0])
        remaining.remove(order[0])
    assert walked == [100, 101, 102, 1, 2, 3]


# --- back after its restart -------------------------------------------------------------------


def _rejoin(voter: QuorumVoter, leader: int | None = 100) -> Quorum:
    others = [QuorumVoter(id=v, lag=0) for v in CONTROLLERS if v != voter.id]
    return Quorum(leader_id=leader, voters=[*others, voter])


@pytest.mark.parametrize(
    ("lag", "caught_up_delta_ms", "leader", "back"),
    [
        (0, 10, 100, True),
        (100, 0, 100, True),
        (101, 10, 100, False),  # still far behind
        (None, 10, 100, False),  # lag unknown
        (0, -1, 100, False),  # caught up only before its restart: the old process's state
        (0, None, 100, False),  # never seen caught up
        (0, 10, None, False),  # no leader
        (5000, None, 101, True),  # it is the leader now
    ],
)
def test_voter_rejoined(
    lag: int | None, caught_up_delta_ms: int | None, leader: int | None, back: bool
) -> None:
    since = int((NOW - timedelta(seconds=30)).timestamp() * 1000)
    caught = None if caught_up_delta_ms is None else since + caught_up_delta_ms
    snap = _rejoin(QuorumVoter(id=101, lag=lag, last_caught_up_ms=caught), leader=leader)
    assert voter_rejoined(snap, 101, since_ms=since, max_lag=100) is back


def test_voter_rejoined_needs_the_node_among_the_voters_and_a_quorum() -> None:
    snap = _rejoin(QuorumVoter(id=101, lag=0, last_caught_up_ms=10**13))
    assert not voter_rejoined(snap, 103, since_ms=0, max_lag=100)
    assert not voter_rejoined(None, 101, since_ms=0, max_lag=100)


# --- the operator's plan ----------------------------------------------------------------------


def test_operator_plan_names_each_nodes_role_with_dedicated_controllers() -> None:
    window = [{"name": "nightly", "schedule": "0 2 * * *", "duration": "2h"}]
    s = spec(mode="Enforce", maintenanceWindows=window, rollingRestart={"requests": [{"id": "r1"}]})
    decision = plan(context(s, snap=dedicated(leader=101)))
    assert decision.action is not None and decision.action.restart is not None
    # without spec.cluster.controllerPods the operator rolls only the brokers its brokerPods map
    assert decision.action.restart.order == [1, 2, 3]
    assert decision.action.details[0].startswith("order: 1 (broker), 2 (broker), 3 (broker) (one at a time;")


def _with_controller_pods(**remediation: object) -> KafkaHealthPolicySpec:
    """factories.spec plus spec.cluster.controllerPods (StatefulSet kafka-controller, ids 100..)."""
    body = spec(**remediation).model_dump(by_alias=True, exclude_none=True)
    body["cluster"]["controllerPods"] = {
        "statefulSet": "kafka-controller",
        "brokerId": {"ordinalOffset": 100},
    }
    return KafkaHealthPolicySpec.model_validate(body)


@pytest.mark.parametrize("leader", CONTROLLERS)
def test_operator_rolls_dedicated_controllers_first_with_controller_pods(leader: int) -> None:
    window = [{"name": "nightly", "schedule": "0 2 * * *", "duration": "2h"}]
    s = _with_controller_pods(
        mode="Enforce", maintenanceWindows=window, rollingRestart={"requests": [{"id": "r1"}]}
    )
    decision = plan(context(s, snap=dedicated(leader=leader)))
    assert decision.action is not None and decision.action.restart is not None
    followers = [c for c in CONTROLLERS if c != leader]
    assert decision.action.restart.order == [*followers, leader, 1, 2, 3]
    assert decision.action.restart.next_broker == followers[0]
    assert decision.action.details[0].startswith(
        f"order: {followers[0]} (controller), {followers[1]} (controller), {leader} (active controller), 1 (broker)"
    )


def test_a_controller_named_without_controller_pods_is_an_invalid_request() -> None:
    window = [{"name": "nightly", "schedule": "0 2 * * *", "duration": "2h"}]
    rr = {"requests": [{"id": "r1", "brokers": [1, 101]}]}
    decision = plan(
        context(spec(mode="Enforce", maintenanceWindows=window, rollingRestart=rr), snap=dedicated())
    )
    assert decision.action is None
    assert [h.reason.value for h in decision.withheld] == ["InvalidRequest"]
    assert (
        "101" in decision.withheld[0].message
        and "spec.cluster.controllerPods" in decision.withheld[0].message
    )
    # with controllerPods the same request rolls the controller first, then the broker
    s = _with_controller_pods(mode="Enforce", maintenanceWindows=window, rollingRestart=rr)
    decision = plan(context(s, snap=dedicated()))
    assert decision.action is not None and decision.action.restart is not None
    assert decision.action.restart.order == [101, 1]


def test_a_controller_is_held_while_another_voter_lags() -> None:
    """The quorum gate through the operator's planner: restarting follower 100 while 102 lags far
    behind would leave one caught-up voter of three, no majority: withheld, named."""
    window = [{"name": "nightly", "schedule": "0 2 * * *", "duration": "2h"}]
    s = _with_controller_pods(
        mode="Enforce", maintenanceWindows=window, rollingRestart={"requests": [{"id": "r1"}]}
    )
    decision = plan(context(s, snap=dedicated(leader=101, lag={102: 10_000})))
    assert decision.action is None or not decision.action.restart or not decision.action.restart.safety.safe
    assert any(h.reason.value == "UnsafeToRestart" for h in decision.withheld), decision.withheld
