"""The steps of `kafka-health restart` and `elect-leaders` that need no cluster: the options
checked into typed settings, the dry run's JSON and exit, and the election's table rows."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
import typer

from kafka_health.cli import elect_cli, restart_options, restart_print
from kafka_health.cli.restart_honest import NeverSafe
from kafka_health.cli.restart_options import AfterEach, Output, PodOptions, RestartArgs
from kafka_health.cli.restart_plan import NodeRow, RollPlan
from kafka_health.models.policy import BrokerIdSource
from tests.unit.plan.factories import partition, snapshot


def args(**change: object) -> RestartArgs:
    base: dict[str, object] = {
        "bootstrap_servers": "b:9092",
        "namespace": "kafka",
        "command_config": None,
        "brokers": PodOptions("kafka", None, None, 0),
        "controllers": PodOptions(None, None, None, 0),
        "nodes": None,
        "after_each": AfterEach(pause="30s", pod_ready="10m", broker_registered="5m", urp_zero="15m"),
        "elect": True,
        "execute": False,
        "kubeconfig": None,
        "request_id": None,
        "lock_namespace": None,
        "output": Output.table,
        "never_safe": NeverSafe.refuse,
        "restart_begun": None,
    }
    return RestartArgs(**{**base, **change})  # type: ignore[arg-type]


def test_the_options_become_the_pod_specs_durations_and_the_begun_broker() -> None:
    opts = restart_options.check(
        args(
            brokers=PodOptions(None, "app=kafka,tier=data", None, 1),
            controllers=PodOptions("kafka-controller", None, "node-id", 0),
            nodes="3,1",
            restart_begun="2=0f3c-uid",
            never_safe=NeverSafe.proceed,
        )
    )
    assert opts.ids == [3, 1]
    assert opts.spec.stateful_set is None
    assert opts.spec.pod_selector is not None
    assert opts.spec.pod_selector.match_labels == {"app": "kafka", "tier": "data"}
    assert opts.spec.broker_id.source is BrokerIdSource.ORDINAL and opts.spec.broker_id.ordinal_offset == 1
    assert opts.controller_spec is not None and opts.controller_spec.stateful_set == "kafka-controller"
    assert opts.controller_spec.broker_id.source is BrokerIdSource.LABEL
    assert opts.pause == timedelta(seconds=30)
    assert [(b.broker, b.pod_uid) for b in opts.begun] == [(2, "0f3c-uid")]
    assert opts.refuse is False


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"brokers": PodOptions(None, None, None, 0)}, "give exactly one of --statefulset or --selector"),
        ({"nodes": "1,1"}, "--brokers: list each non-negative broker id once"),
        ({"nodes": "a"}, "--brokers 'a': give broker ids separated by commas"),
        ({"restart_begun": "x"}, "--restart-begun 'x': use BROKER=POD_UID"),
        ({"after_each": AfterEach("soon", "10m", "5m", "15m")}, "soon"),
    ],
)
def test_a_bad_option_exits_3_naming_it(
    change: dict[str, object], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(typer.Exit) as exit_:
        restart_options.check(args(**change))
    assert exit_.value.exit_code == 3
    assert message in capsys.readouterr().err


def plan(safe_first: bool) -> RollPlan:
    snap = snapshot([partition("orders", 0, [1, 2, 3])])
    rows = [
        NodeRow(1, "broker", "not a voter", "kafka-1", True, safe_first, [], []),
        NodeRow(2, "broker", "not a voter", "kafka-2", True, True, [], []),
    ]
    return RollPlan(snap, [1, 2], rows)


@pytest.mark.parametrize(("safe_first", "code"), [(True, 0), (False, 1)])
def test_the_dry_run_json_names_the_plan_and_exits_by_the_first_node(
    safe_first: bool, code: int, capsys: pytest.CaptureFixture[str]
) -> None:
    opts = restart_options.check(args(output=Output.json))
    exit_ = restart_print.print_json(opts, plan(safe_first))
    doc = json.loads(capsys.readouterr().out)
    assert exit_.exit_code == code
    assert list(doc) == [
        "cluster",
        "mode",
        "quorumLeader",
        "order",
        "nodes",
        "afterEach",
        "electAfter",
        "drainLeadership",
        "batches",
        "neverSafe",
    ]
    assert doc["order"] == [1, 2] and doc["mode"] == "dryRun" and doc["quorumLeader"] == 3
    assert doc["nodes"][0] == {
        "node": 1,
        "role": "broker",
        "why": "not a voter",
        "pod": "kafka-1",
        "ready": True,
        "safeNow": safe_first,
        "blockers": [],
        "skipped": [],
    }
    assert doc["afterEach"]["pause"] == "30s" and doc["neverSafe"]["choice"] == "refuse"


@pytest.mark.parametrize(("safe_first", "code"), [(True, 0), (False, 1)])
def test_a_dry_run_table_stops_at_the_gate(safe_first: bool, code: int) -> None:
    stop = restart_print.gate(restart_options.check(args()), plan(safe_first))
    assert stop is not None and stop.exit_code == code


def test_an_executed_roll_passes_the_gate() -> None:
    assert restart_print.gate(restart_options.check(args(execute=True)), plan(True)) is None


def test_election_rows_name_what_is_elected_and_why_the_rest_is_skipped() -> None:
    parts = [
        partition("t", 0, [1, 2, 3]),  # led by its preferred replica: no row
        partition("t", 1, [1, 2, 3], leader=2),  # electable
        partition("t", 2, [3, 1, 2], leader=1),  # preferred 3 not alive
        partition("t", 3, [2, 1, 3], isr=[1, 3], leader=1),  # preferred 2 not in the ISR
    ]
    rows = elect_cli._rows(parts, {1, 2}, None)
    assert rows == [
        ["t", "1", "2 -> 1", "1,2,3", "elect"],
        ["t", "2", "1 -> 3", "3,1,2", "skip: preferred 3 not alive"],
        ["t", "3", "1 -> 2", "1,3", "skip: preferred 2 not in ISR"],
    ]
