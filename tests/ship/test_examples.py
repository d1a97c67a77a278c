"""examples/: every policy is valid for the pydantic model and for the API server (CRD + CEL)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from kafka_health.models.policy import BrokerIdSource, KafkaHealthPolicy, Mode
from tests.ship import chart
from tests.ship.chart import REPO

EXAMPLES = sorted((REPO / "examples").glob("*.yaml"))


def load(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def test_the_common_cases_have_examples() -> None:
    assert {p.name for p in EXAMPLES} >= {
        "observe-only.yaml",
        "nightly-leader-election.yaml",
        "rolling-restart-request.yaml",
        "offset-reset-after-restore.yaml",
        "strimzi-policy.yaml",
        "hanging-transaction-abort.yaml",
    }


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_is_a_valid_policy(path: Path) -> None:
    docs = load(path)
    assert len(docs) == 1
    policy = KafkaHealthPolicy.model_validate(docs[0])
    assert "namespace" not in policy.metadata, "examples are applied with kubectl -n <ns>"
    assert policy.status is None
    # Each example says what it is for, in a comment at the top.
    assert path.read_text().startswith("# ")


def test_examples_do_what_their_names_say() -> None:
    def spec(name: str) -> Any:
        return KafkaHealthPolicy.model_validate(load(REPO / "examples" / name)[0]).spec

    observe = spec("observe-only.yaml")
    assert observe.remediation.mode is Mode.OBSERVE

    nightly = spec("nightly-leader-election.yaml")
    assert nightly.remediation.mode is Mode.ENFORCE
    assert nightly.remediation.preferred_leader_election.enabled
    assert nightly.remediation.preferred_leader_election.require_maintenance_window
    assert any(w.name == "nightly" for w in nightly.remediation.maintenance_windows or [])
    assert nightly.cluster.security.sasl is not None  # credentials by Secret reference

    roll = spec("rolling-restart-request.yaml")
    assert roll.cluster.broker_pods is not None
    assert [r.id for r in roll.remediation.rolling_restart.requests or []] == ["2026-11-20-jvm-upgrade"]

    aborts = spec("hanging-transaction-abort.yaml")
    (abort,) = aborts.remediation.transaction_aborts.requests or []
    assert (abort.topic, abort.partition, abort.start_offset) == ("payments", 3, 918273)
    assert aborts.diagnostics.checks.hanging_transactions.enabled and aborts.remediation.require_approval

    reset = spec("offset-reset-after-restore.yaml")
    (request,) = reset.remediation.offset_resets.requests or []
    assert request.strategy == "toDatetime"
    assert reset.remediation.require_approval

    # Strimzi's pods: every pod of cluster my-cluster with the broker role, id from the name's end
    # (tests/compat/test_older_kafka.py rolls pods named and labelled that way with this selector).
    strimzi = spec("strimzi-policy.yaml")
    pods = strimzi.cluster.broker_pods
    assert pods is not None and pods.pod_selector is not None and pods.stateful_set is None
    assert pods.pod_selector.match_labels == {
        "strimzi.io/cluster": "my-cluster",
        "strimzi.io/broker-role": "true",
    }
    assert pods.broker_id.source is BrokerIdSource.ORDINAL and pods.broker_id.ordinal_offset == 0
    controllers = strimzi.cluster.controller_pods  # dedicated controller pools: no broker role
    assert controllers is not None and controllers.pod_selector is not None
    assert controllers.pod_selector.match_labels == {
        "strimzi.io/cluster": "my-cluster",
        "strimzi.io/broker-role": "false",
    }
    assert strimzi.remediation.require_approval
    assert not strimzi.remediation.rolling_restart.require_maintenance_window  # runs once approved


@pytest.mark.k8s
def test_examples_pass_server_side_dry_run(
    k8s_control_plane: Any, k8s_bin_dir: str | None, chart_crds: None, k8s_namespace: str
) -> None:
    out = chart.kubectl(
        k8s_control_plane.kubeconfig, "apply", "--server-side", "--dry-run=server", "-n", k8s_namespace,
        "-f", str(REPO / "examples"), bin_dir=k8s_bin_dir,
    )  # fmt: skip
    lines = [line for line in out.splitlines() if line.strip()]
    assert len(lines) == len(EXAMPLES), lines
    assert all("serverside-applied (server dry run)" in line for line in lines), lines


@pytest.mark.k8s
def test_server_side_dry_run_enforces_the_crd_rules(
    k8s_control_plane: Any, k8s_bin_dir: str | None, chart_crds: None, k8s_namespace: str
) -> None:
    """The dry run checks the CEL rules: a restart request without brokerPods is refused."""
    policy = copy.deepcopy(load(REPO / "examples" / "rolling-restart-request.yaml")[0])
    del policy["spec"]["cluster"]["brokerPods"]
    with pytest.raises(chart.ChartError, match=r"rolling restart requests need cluster\.brokerPods"):
        chart.kubectl(
            k8s_control_plane.kubeconfig, "apply", "--server-side", "--dry-run=server", "-n", k8s_namespace,
            "-f", "-", bin_dir=k8s_bin_dir, input_text=yaml.safe_dump(policy),
        )  # fmt: skip
