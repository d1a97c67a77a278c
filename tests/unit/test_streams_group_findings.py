"""`diagnose.streams_groups`: a NotReady streams group is critical and names what it misses (a
topic hidden from the principal is not called missing); members without any active task, in a
group that runs, are idle; other kinds of group and healthy streams groups say nothing."""

from __future__ import annotations

from kafka_health.diagnose.streams_groups import streams_findings
from kafka_health.models.snapshot import ConsumerGroup, GroupMember, StreamsTopology


def streams(state: str, members: list[GroupMember], missing: list[str] | None = None) -> ConsumerGroup:
    return ConsumerGroup(
        group_id="app",
        state=state,
        kind="streams",
        members=len(members),
        member_ids=[m.member_id for m in members],
        member_details=members,
        streams=StreamsTopology(
            topology_epoch=0, source_topics={"0": ["in"], "1": ["other"]}, missing_source_topics=missing or []
        ),
    )


def member(name: str, parts: list[tuple[str, int]]) -> GroupMember:
    return GroupMember(member_id=name, assignment=parts, target=parts)


def test_not_ready_names_the_missing_source_topics() -> None:
    (f,) = streams_findings([streams("NotReady", [member("m1", [])], ["in"])])
    assert (f.check, f.severity.value, f.subject.group) == ("streams_group_not_ready", "critical", "app")
    assert f.evidence["missing_source_topics"] == "in" and f.evidence["source_topics"] == "in,other"
    assert "source topic in is missing" in f.message and "its 1 member has no task" in f.message
    assert f.remediation is not None and f.remediation.startswith("create in")


def test_a_hidden_topic_is_not_called_missing() -> None:
    (f,) = streams_findings([streams("NotReady", [], ["in", "other"])], hidden=["other"])
    assert f.evidence["missing_source_topics"] == "in"
    assert "other hidden from the principal" in f.message


def test_not_ready_with_every_topic_present_is_the_topologys_misfit() -> None:
    (f,) = streams_findings([streams("NotReady", [member("m1", [])])])
    assert f.evidence["missing_source_topics"] == "" and "co-partition" in f.message


def test_members_without_any_active_task_are_idle_only_in_a_running_group() -> None:
    busy, idle = member("m1", [("in", 0)]), member("m2", [])
    (f,) = streams_findings([streams("Stable", [busy, idle])])
    assert (f.check, f.severity.value, f.evidence["idle_member_ids"]) == (
        "streams_members_idle",
        "warning",
        "m2",
    )
    assert streams_findings([streams("Stable", [busy])]) == []
    # A member about to get tasks (its target has some) is not idle.
    joining = GroupMember(member_id="m3", assignment=[], target=[("in", 1)])
    assert streams_findings([streams("Reconciling", [busy, joining])]) == []


def test_other_kinds_say_nothing() -> None:
    consumer = ConsumerGroup(group_id="c", state="Stable", kind="consumer", members=0)
    assert streams_findings([consumer]) == []
