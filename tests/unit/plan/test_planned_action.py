"""A planned action is one of three kinds, each with exactly its own plan (plan.decision)."""

from __future__ import annotations

import pytest
from pydantic import TypeAdapter, ValidationError

from kafka_health.models.policy import ActionType
from kafka_health.plan import PlannedAction, PlannedElection, PlannedOffsetReset, PlannedRestart
from kafka_health.plan.leader_election_plan import ElectionPlan

ADAPTER: TypeAdapter[PlannedAction] = TypeAdapter(PlannedAction)
ELECTION = ElectionPlan(partitions=[], batches=[])


def test_the_action_names_the_kind_and_the_kind_its_plan() -> None:
    planned = ADAPTER.validate_python(
        {"action": "PreferredLeaderElection", "plan_id": "ple-1", "summary": "s", "election": ELECTION}
    )
    assert isinstance(planned, PlannedElection) and planned.action is ActionType.PREFERRED_LEADER_ELECTION
    assert ADAPTER.validate_json(ADAPTER.dump_json(planned)) == planned


@pytest.mark.parametrize(
    ("action", "field"),
    [("PreferredLeaderElection", "restart"), ("RollingRestart", "election"), ("OffsetReset", "election")],
)
def test_a_kind_cannot_carry_another_kinds_plan(action: str, field: str) -> None:
    with pytest.raises(ValidationError):
        ADAPTER.validate_python({"action": action, "plan_id": "p", "summary": "s", field: ELECTION})


def test_each_kind_requires_its_plan() -> None:
    for kind in (PlannedElection, PlannedRestart, PlannedOffsetReset):
        with pytest.raises(ValidationError):
            kind.model_validate({"plan_id": "p", "summary": "s"})
