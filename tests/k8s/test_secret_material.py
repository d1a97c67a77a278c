"""A policy's TLS material lives only as long as the policy, through the operator and a real API
server: the CA taken from a Secret is a 0600 file in a 0700 directory of the operator's own; a
changed Secret replaces the file (the old one is gone); deleting the policy leaves nothing; the
operator's shutdown leaves nothing; and what a killed operator left is removed when the next
one starts (controller/credentials.py)."""

from __future__ import annotations

import os
import stat
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kafka_health._kits.waiting import wait_for
from kafka_health.controller.credentials import MATERIAL_PREFIX
from kafka_health.testbed import security
from kafka_health.testbed.cluster import Testbed
from kafka_health.testbed.controlplane import ControlPlane
from tests.k8s.operator_process import OperatorProcess, apply, chart_operator, condition, kubectl, wait_status
from tests.secured.helpers import secured_testbed

pytestmark = [pytest.mark.k8s, pytest.mark.kafka]

INTERVAL_S = 10


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Testbed]:
    yield from secured_testbed(
        tmp_path_factory.mktemp("secret-material"), "ssl", port_key="secret-material:ssl"
    )


@pytest.fixture(scope="module")
def ns(k8s_control_plane: ControlPlane, crds: None, tls: Testbed) -> str:
    name = f"mat-{uuid.uuid4().hex[:6]}"
    kubectl(k8s_control_plane, "create", "namespace", name)
    return name


def set_ca(cp: ControlPlane, ns: str, value: str) -> None:
    """Create or replace Secret kafka-ca with key ca.crt = value."""
    manifest = kubectl(
        cp, "create", "secret", "generic", "kafka-ca", "-n", ns, "--from-file=ca.crt=/dev/stdin",
        "--dry-run=client", "-o", "yaml", input=value,
    ).stdout  # fmt: skip
    kubectl(
        cp, "apply", "--server-side", "--force-conflicts", "--field-manager=e2e", "-f", "-", input=manifest
    )


def policy(ns: str, name: str, tb: Testbed) -> dict[str, Any]:
    return {
        "apiVersion": "kafkahealth.io/v1alpha1",
        "kind": "KafkaHealthPolicy",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "cluster": {
                "bootstrapServers": tb.require().bootstrap_servers.split(","),
                "security": {"protocol": "SSL", "tls": {"ca": {"name": "kafka-ca", "key": "ca.crt"}}},
            },
            "diagnostics": {"interval": f"{INTERVAL_S}s"},
        },
    }


def material(op: OperatorProcess) -> list[Path]:
    """Every file under the operator's work dir's TLS material directories."""
    return sorted(p for p in (op.workdir / "work").glob(f"{MATERIAL_PREFIX}*/**/*") if p.is_file())


def mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def wait_material(op: OperatorProcess, predicate: Any, what: str, timeout: float = 120) -> list[Path]:
    def check() -> tuple[list[Path]] | None:  # a tuple: an empty list is an answer too
        files = material(op)
        return (files,) if predicate(files) else None

    try:
        found: tuple[list[Path]] = wait_for(check, timeout=timeout, interval=0.5, what=what)
    except TimeoutError as exc:
        raise AssertionError(f"{exc}; on disk: {material(op)}") from None
    return found[0]


def test_tls_material_lives_only_as_long_as_its_policy(
    k8s_control_plane: ControlPlane, ns: str, tls: Testbed, tmp_path: Path
) -> None:
    cp = k8s_control_plane
    ca = tls.material().ca_file.read_text()
    set_ca(cp, ns, ca)
    op, ident = chart_operator(cp, tmp_path / "operator", ns)
    op.start()
    try:
        assert op.proc is not None
        own = op.workdir / "work" / f"{MATERIAL_PREFIX}{op.proc.pid}"
        apply(cp, policy(ns, "p", tls))
        ok = wait_status(cp, ns, "p", lambda s: "lastDiagnosis" in s, timeout=240, what="diagnosed")
        assert condition(ok, "Ready")["status"] == "True", ok

        # Written 0600, in 0700 directories of the operator's user, under this process's directory.
        [first] = material(op)
        assert first.parent == own / ns / "p" and first.name.startswith("ca-")
        assert first.read_text() == ca and mode(first) == 0o600
        for d in (op.workdir / "work", own, own / ns, own / ns / "p"):
            assert mode(d) == 0o700, d
            assert os.lstat(d).st_uid == os.geteuid()

        # The Secret changes (a bundle: the same CA and another one): a new file, the old one gone.
        bundle = ca + security.make_ca("another CA").cert.decode()
        set_ca(cp, ns, bundle)
        [second] = wait_material(op, lambda fs: len(fs) == 1 and fs[0] != first, "the new CA file alone")
        assert second.read_text() == bundle and mode(second) == 0o600 and not first.exists()

        # The policy is deleted: nothing of it remains.
        kubectl(cp, "delete", "khp", "p", "-n", ns, "--wait=true", "--timeout=120s")
        wait_material(op, lambda fs: fs == [], "no material after the policy was deleted", timeout=60)
        assert not (own / ns / "p").exists()

        # Shutdown: the process's material directory is removed.
        apply(cp, policy(ns, "q", tls))
        wait_material(op, lambda fs: len(fs) == 1, "the second policy's CA file")
        op.stop()
        assert material(op) == [] and not own.exists(), material(op)

        # A killed operator cannot clean up; the next one removes what it left when it starts.
        op.start()
        killed = op.workdir / "work" / f"{MATERIAL_PREFIX}{op.proc.pid}"
        assert op.proc is not None
        wait_material(
            op, lambda fs: len(fs) == 1 and fs[0].is_relative_to(killed), "q's CA file", timeout=240
        )
        op.stop(kill=True)
        assert killed.exists()  # left behind
        op.start()
        assert not killed.exists(), material(op)
        # (Kopf's peering may hold the new process back until the killed one's record expires.)
        wait_material(op, lambda fs: len(fs) == 1, "q's CA file, written by the new process", timeout=240)
    finally:
        kubectl(cp, "delete", "khp", "--all", "-n", ns, "--wait=true", "--timeout=120s", check=False)
        op.stop()
        ident.uninstall()
    assert material(op) == []
