"""How long a policy's TLS material lives on disk (controller/credentials.py), on a real
filesystem: written 0600 in 0700 directories of the operator's own, replaced (never added to)
when the Secret changes, gone when the policy stops or the process ends, and what a killed
process left behind removed at the next start. tests/k8s/test_secret_material.py proves it
through the operator and a real API server."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from kafka_health.controller import credentials
from kafka_health.controller.credentials import (
    connection_for,
    forget_policy,
    material_root,
    policy_material_dir,
    prepare_work_dir,
    remove_material,
)
from kafka_health.models.policy import ClusterSpec

CA_V1 = "-----BEGIN CERTIFICATE-----\nv1\n-----END CERTIFICATE-----\n"
CA_V2 = "-----BEGIN CERTIFICATE-----\nv2\n-----END CERTIFICATE-----\n"


def spec(*, tls: bool = True, client_certificate: bool = False) -> ClusterSpec:
    security: dict[str, object] = {"protocol": "SSL" if tls else "PLAINTEXT"}
    if tls:
        refs: dict[str, object] = {"ca": {"name": "kafka", "key": "ca.crt"}}
        if client_certificate:
            refs |= {
                "certificate": {"name": "kafka", "key": "tls.crt"},
                "key": {"name": "kafka", "key": "tls.key"},
            }
        security["tls"] = refs
    return ClusterSpec.model_validate({"bootstrapServers": ["kafka:9093"], "security": security})


def mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def files(work_dir: Path) -> list[Path]:
    return sorted(p for p in work_dir.rglob("*") if p.is_file())


def test_material_is_0600_in_0700_directories_of_its_own(tmp_path: Path) -> None:
    prepare_work_dir(tmp_path)
    secrets = {"ca.crt": CA_V1, "tls.crt": "cert", "tls.key": "KEY"}
    where = policy_material_dir(tmp_path, "ns", "p")
    conn = connection_for(spec(client_certificate=True), "ns", lambda ns, n, k: secrets[k], where)
    written = files(tmp_path)
    assert {p.parent for p in written} == {where} and len(written) == 3
    assert all(mode(p) == 0o600 for p in written)
    for d in (tmp_path, material_root(tmp_path), where.parent, where):
        assert mode(d) == 0o700, d
        assert os.lstat(d).st_uid == os.geteuid()
    assert Path(conn.options["ssl.key.location"]).read_text() == "KEY"


def test_a_changed_secret_leaves_no_old_file(tmp_path: Path) -> None:
    where = policy_material_dir(tmp_path, "ns", "p")
    secrets = {"ca.crt": CA_V1}
    old = Path(connection_for(spec(), "ns", lambda ns, n, k: secrets[k], where).options["ssl.ca.location"])
    secrets["ca.crt"] = CA_V2
    new = Path(connection_for(spec(), "ns", lambda ns, n, k: secrets[k], where).options["ssl.ca.location"])
    assert new != old and not old.exists()
    assert files(tmp_path) == [new] and new.read_text() == CA_V2


def test_a_policy_that_drops_its_tls_material_has_no_directory(tmp_path: Path) -> None:
    where = policy_material_dir(tmp_path, "ns", "p")
    connection_for(spec(client_certificate=True), "ns", lambda ns, n, k: CA_V1, where)
    connection_for(spec(), "ns", lambda ns, n, k: CA_V1, where)  # CA only: key and cert go
    assert [p.name.split("-")[0] for p in files(tmp_path)] == ["ca"]
    connection_for(spec(tls=False), "ns", lambda ns, n, k: CA_V1, where)
    assert files(tmp_path) == [] and not where.exists() and not where.parent.exists()


def test_a_stopped_policy_leaves_nothing_and_spares_the_others(tmp_path: Path) -> None:
    for name in ("a", "b"):
        connection_for(spec(), "ns", lambda ns, n, k: CA_V1, policy_material_dir(tmp_path, "ns", name))
    forget_policy(tmp_path, "ns", "a")
    assert not policy_material_dir(tmp_path, "ns", "a").exists()
    assert len(files(tmp_path)) == 1  # b's
    forget_policy(tmp_path, "ns", "b")
    assert files(tmp_path) == [] and not (material_root(tmp_path) / "ns").exists()
    forget_policy(tmp_path, "ns", "never-written")  # nothing to remove is no error


def test_shutdown_removes_all_of_this_processs_material(tmp_path: Path) -> None:
    connection_for(spec(), "ns", lambda ns, n, k: CA_V1, policy_material_dir(tmp_path, "ns", "p"))
    remove_material(tmp_path)
    assert files(tmp_path) == [] and not material_root(tmp_path).exists()


def test_start_up_removes_what_processes_that_are_gone_left(tmp_path: Path) -> None:
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    dead_pid, live_pid = int(gone.stdout), os.getppid()
    for pid in (dead_pid, live_pid, os.getpid()):
        d = material_root(tmp_path, pid) / "ns" / "p"
        d.mkdir(parents=True)
        (d / "ca-x.pem").write_text(CA_V1)
    prepare_work_dir(tmp_path)
    assert not material_root(tmp_path, dead_pid).exists()
    assert not material_root(tmp_path).exists()  # an earlier process with this pid (a restarted container)
    assert material_root(tmp_path, live_pid).exists()  # another operator still running


def test_a_work_dir_of_another_user_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(credentials.os, "geteuid", lambda: os.getuid() + 1)
    with pytest.raises(PermissionError, match="KAFKA_HEALTH_WORK_DIR"):
        prepare_work_dir(tmp_path)
