"""Kafka 3.9 and 4.1 (the newest of each line the testbed knows): a representative subset of the
suite (which runs on the testbed's default, Kafka 4.4), run unchanged on one shared 3-broker
cluster per version (this module's `testbed`, parametrized: the 3.9 cluster, then the 4.1 one, on
the same ports; the session fixtures `kafka`, `bootstrap` and `unique_name` then use it):

- diagnosis parity: our under-replicated / under-min-ISR / at-min-ISR / offline sets equal
  `kafka-topics --describe` (tests/diagnose/test_real_faults.py);
- preferred leader election: our plan equals what `kafka-leader-election` elects, and the
  executor reports every partition (tests/remediate/test_leader_election.py);
- an offset reset through `kafka-health reset-offsets`: dry run, refusal while the group has
  members, execute, rollback from the saved file (tests/remediate/test_offset_reset.py; after the
  elections above, which move the group coordinator: its helpers retry while it moves);
- a rolling restart through `kafka-health restart` against pods named and labelled the way
  Strimzi names them (the stand-in's Strimzi layout), with the selector of
  examples/strimzi-policy.yaml (which also proves that example's pod mapping).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client
from typer.testing import CliRunner

from kafka_health.cli.main import app
from kafka_health.k8s.client import K8s
from kafka_health.models.policy import KafkaHealthPolicySpec
from kafka_health.remediate.broker_pods import find_broker_pods
from kafka_health.testbed import distribution, faults
from kafka_health.testbed.cluster import Testbed
from kafka_health.testbed.controlplane import ControlPlane
from kafka_health.testbed.pod_layout import PodLayout
from kafka_health.testbed.standin import StandIn
from tests.diagnose.conftest import spark  # noqa: F401  (the fixture, for the parity test)
from tests.diagnose.test_real_faults import test_stopped_broker_lists_equal_kafka_topics as _parity
from tests.remediate.test_leader_election import (  # noqa: F401
    test_execute_reports_every_partition,
    test_plan_is_what_kafka_leader_election_elects,
)
from tests.remediate.test_offset_reset import (  # noqa: F401
    active,
    test_cli_dry_run_refusal_execute_and_rollback,
)

pytestmark = [pytest.mark.kafka]

test_stopped_broker_lists_equal_kafka_topics = pytest.mark.spark(_parity)  # as marked where it lives

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "strimzi-policy.yaml"
# From KAFKA_HEALTH_TEST_PORT: clients 2600-2602, controllers 2700-2702, inter-broker 2800-2802
# (clear of the session cluster and of tests/secured and tests/k8s/test_controller_pods.py).
PORT_OFFSET = 2600


@pytest.fixture(scope="module", params=["3.9", "4.1"], ids=["kafka-3.9", "kafka-4.1"])
def testbed(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Testbed]:
    """This module's cluster: 3 combined nodes on the newest Kafka of the line, shared by every
    test here (pytest finishes one version's tests, and stops its cluster, before the next)."""
    line = request.param
    tb = Testbed(tmp_path_factory.mktemp(f"kafka{line.replace('.', '')}"))
    try:
        tb.up(
            3, int(os.environ.get("KAFKA_HEALTH_TEST_PORT", "29092")) + PORT_OFFSET, kafka_version=f"{line}.x"
        )
        assert tb.require().kafka_version == distribution.NEWEST[line]
        yield tb
    finally:
        tb.down(purge=True)


def line_of(testbed: Testbed) -> str:
    """ "3.9" for Kafka 3.9.2: names this version's namespace and request id."""
    return ".".join(testbed.require().kafka_version.split(".")[:2])


@pytest.fixture(scope="module")
def strimzi_pods(testbed: Testbed, k8s_control_plane: ControlPlane) -> Iterator[StandIn]:
    """The stand-in for this cluster, Strimzi's names and labels, in a namespace of its version's."""
    layout = PodLayout.strimzi(f"strimzi-{line_of(testbed).replace('.', '')}")
    standin = StandIn(testbed.state_dir, k8s_control_plane.kubeconfig, layout)
    standin.start()
    yield standin
    standin.stop()


def strimzi_pods_now(core: Any, namespace: str) -> dict[str, Any]:
    return {p.metadata.name: p for p in core.list_namespaced_pod(namespace).items}


@pytest.mark.k8s
def test_roll_restarts_strimzi_named_pods_selected_as_the_example_policy_says(
    kafka: Testbed,
    strimzi_pods: StandIn,
    k8s_api: client.ApiClient,
    k8s_control_plane: ControlPlane,
) -> None:
    strimzi_pods.wait_pods_ready(timeout=180)
    line = line_of(kafka)
    namespace = f"strimzi-{line.replace('.', '')}"
    core: Any = client.CoreV1Api(k8s_api)
    pods = strimzi_pods_now(core, namespace)
    names = [f"my-cluster-dual-role-{i}" for i in range(3)]
    assert sorted(pods) == names
    labels = pods["my-cluster-dual-role-1"].metadata.labels
    assert {k: v for k, v in labels.items() if k.startswith("strimzi.io/")} == {
        "strimzi.io/cluster": "my-cluster",
        "strimzi.io/kind": "Kafka",
        "strimzi.io/name": "my-cluster-kafka",
        "strimzi.io/component-type": "kafka",
        "strimzi.io/controller": "strimzipodset",
        "strimzi.io/controller-name": "my-cluster-dual-role",
        "strimzi.io/pool-name": "dual-role",
        "strimzi.io/broker-role": "true",
        "strimzi.io/controller-role": "true",
        "strimzi.io/pod-name": "my-cluster-dual-role-1",
    }
    (owner,) = pods["my-cluster-dual-role-1"].metadata.owner_references
    assert (owner.kind, owner.name) == ("StrimziPodSet", "my-cluster-dual-role")

    # The example policy, as shipped, maps each pod to the broker whose id ends its name.
    doc = yaml.safe_load(EXAMPLE.read_text())
    spec = KafkaHealthPolicySpec.model_validate(doc["spec"])
    broker_pods = spec.cluster.broker_pods
    assert broker_pods is not None and broker_pods.pod_selector is not None
    found = find_broker_pods(K8s(k8s_api), broker_pods, namespace)
    assert {bid: bp.pod.name for bid, bp in found.items()} == {i: names[i] for i in range(3)}

    before_pids = {b.id: b.pid for b in kafka.require().brokers}
    before_uids = {name: p.metadata.uid for name, p in pods.items()}
    selector = ",".join(f"{k}={v}" for k, v in sorted(broker_pods.pod_selector.match_labels.items()))
    result = CliRunner().invoke(
        app,
        [
            "restart",
            "-b",
            kafka.require().bootstrap_servers,
            "-n",
            namespace,
            "--kubeconfig",
            str(k8s_control_plane.kubeconfig),
            "--selector",
            selector,
            "--pause",
            "1s",
            "--execute",
            "--id",
            f"strimzi-{line.replace('.', '')}",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "Succeeded: restarted brokers " in result.output
    for name in names:
        assert name in result.output  # the plan and progress name Strimzi's pods
    after = strimzi_pods_now(core, namespace)
    assert sorted(after) == names
    assert all(after[n].metadata.uid != before_uids[n] for n in names)  # every pod recreated
    after_pids = {b.id: b.pid for b in kafka.require().brokers}
    assert all(after_pids[i] != before_pids[i] for i in range(3))  # every broker restarted
    strimzi_pods.wait_pods_ready(timeout=180)
    faults.heal(kafka)
