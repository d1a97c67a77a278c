"""The operator through Secrets on a real SASL_SSL broker: it diagnoses with the right
credentials, and each wrong setting gets its own Degraded reason naming the Secret key or field
to fix, never a secret, never `KafkaUnreachable`."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kafka_health.testbed import security
from kafka_health.testbed.cluster import Testbed
from kafka_health.testbed.controlplane import ControlPlane
from tests.k8s.operator_process import OperatorProcess, apply, chart_operator, condition, kubectl, wait_status
from tests.secured.helpers import secured_testbed

pytestmark = [pytest.mark.k8s, pytest.mark.kafka]

INTERVAL_S = 10
WRONG = "Wr0ng-Operator-Secret"


@pytest.fixture(scope="module")
def sasl(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Testbed]:
    yield from secured_testbed(tmp_path_factory.mktemp("op-sasl"), "sasl_ssl", port_key="operator:sasl_ssl")


@pytest.fixture(scope="module")
def mtls(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Testbed]:
    yield from secured_testbed(tmp_path_factory.mktemp("op-mtls"), "mtls", port_key="operator:mtls")


@pytest.fixture(scope="module")
def ns(k8s_control_plane: ControlPlane, crds: None, sasl: Testbed, mtls: Testbed) -> str:
    name = f"sec-{uuid.uuid4().hex[:6]}"
    cp = k8s_control_plane
    kubectl(cp, "create", "namespace", name)
    material = sasl.material()
    for secret, literals in (
        ("kafka-admin", {"username": security.ADMIN, "password": material.password(security.ADMIN)}),
        ("kafka-app", {"username": security.APP, "password": material.password(security.APP)}),
        ("kafka-wrong", {"username": security.ADMIN, "password": WRONG}),
    ):
        args = [f"--from-literal={k}={v}" for k, v in literals.items()]
        kubectl(cp, "create", "secret", "generic", secret, "-n", name, *args)
    kubectl(
        cp, "create", "secret", "generic", "kafka-ca", "-n", name, f"--from-file=ca.crt={material.ca_file}"
    )
    other = Path(str(material.dir)) / "other-ca.pem"
    other.write_bytes(security.make_ca("not the testbed's CA").cert)
    kubectl(cp, "create", "secret", "generic", "other-ca", "-n", name, f"--from-file=ca.crt={other}")
    certs = mtls.material()
    kubectl(
        cp,
        "create",
        "secret",
        "generic",
        "kafka-mtls",
        "-n",
        name,
        f"--from-file=ca.crt={certs.ca_file}",
        f"--from-file=tls.crt={certs.user_cert(security.ADMIN)}",
        f"--from-file=tls.key={certs.user_key(security.ADMIN)}",
    )
    return name


@pytest.fixture(scope="module")
def operator(
    k8s_control_plane: ControlPlane, ns: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[OperatorProcess]:
    op, ident = chart_operator(k8s_control_plane, tmp_path_factory.mktemp("operator"), ns)
    op.start()
    yield op
    op.stop()
    ident.uninstall()


@pytest.fixture(autouse=True)
def _policies_deleted_after_each_test(k8s_control_plane: ControlPlane, ns: str) -> Iterator[None]:
    yield
    kubectl(k8s_control_plane, "delete", "khp", "--all", "-n", ns, "--wait=true", "--timeout=120s")


def policy(
    ns: str, name: str, sasl: Testbed, user_secret: str, ca_secret: str = "kafka-ca"
) -> dict[str, Any]:
    return {
        "apiVersion": "kafkahealth.io/v1alpha1",
        "kind": "KafkaHealthPolicy",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "cluster": {
                "bootstrapServers": sasl.require().bootstrap_servers.split(","),
                "security": {
                    "protocol": "SASL_SSL",
                    "sasl": {
                        "mechanism": "SCRAM-SHA-512",
                        "username": {"name": user_secret, "key": "username"},
                        "password": {"name": user_secret, "key": "password"},
                    },
                    "tls": {"ca": {"name": ca_secret, "key": "ca.crt"}},
                },
            },
            "diagnostics": {"interval": f"{INTERVAL_S}s"},
        },
    }


def degraded(cp: ControlPlane, ns: str, name: str) -> dict[str, Any]:
    return wait_status(
        cp,
        ns,
        name,
        lambda s: condition(s, "Degraded").get("status") == "True",
        timeout=240,
        what="Degraded",
    )


def no_secret(cp: ControlPlane, ns: str, sasl: Testbed, name: str) -> None:
    status = json.dumps(kubectl(cp, "get", "khp", name, "-n", ns, "-o", "json").stdout)
    events = kubectl(cp, "get", "events", "-n", ns, "-o", "json").stdout
    for secret in [*sasl.material().passwords().values(), WRONG]:
        assert secret not in status and secret not in events


def test_operator_diagnoses_sasl_ssl_and_names_each_security_failure(
    k8s_control_plane: ControlPlane, operator: OperatorProcess, ns: str, sasl: Testbed
) -> None:
    cp = k8s_control_plane
    apply(cp, policy(ns, "admin", sasl, "kafka-admin"))
    apply(cp, policy(ns, "wrong-password", sasl, "kafka-wrong"))
    apply(cp, policy(ns, "bad-ca", sasl, "kafka-admin", ca_secret="other-ca"))
    apply(cp, policy(ns, "app", sasl, "kafka-app"))
    wrong_host = policy(ns, "wrong-host", sasl, "kafka-admin")  # the certificates name 127.0.0.1 only
    wrong_host["spec"]["cluster"]["bootstrapServers"] = [f"localhost:{sasl.require().brokers[0].port}"]
    apply(cp, wrong_host)

    ok = wait_status(cp, ns, "admin", lambda s: "lastDiagnosis" in s, timeout=300, what="diagnosed")
    assert condition(ok, "Ready")["status"] == "True", ok
    assert condition(ok, "Degraded")["status"] == "False", ok

    wrong = condition(degraded(cp, ns, "wrong-password"), "Degraded")
    assert wrong["reason"] == "KafkaAuthenticationFailed", wrong
    assert "spec.cluster.security.sasl.username/password" in wrong["message"]

    bad_ca = condition(degraded(cp, ns, "bad-ca"), "Degraded")
    assert bad_ca["reason"] == "KafkaTLSUntrustedCertificate", bad_ca
    assert "spec.cluster.security.tls.ca" in bad_ca["message"]
    assert "ssl.ca.location" not in bad_ca["message"]  # librdkafka's key, not the user's

    host = condition(degraded(cp, ns, "wrong-host"), "Degraded")
    assert host["reason"] == "KafkaTLSHostnameMismatch", host
    assert "does not name the host localhost" in host["message"], host
    assert (
        "carries IP:127.0.0.1" in host["message"]
        and "spec.cluster.security.tls.verifyHostname" in host["message"]
    )

    app = degraded(cp, ns, "app")
    denied = condition(app, "Degraded")
    assert denied["reason"] == "KafkaAuthorizationDenied", denied
    assert "lacks DESCRIBE on CLUSTER kafka-cluster" in denied["message"]
    assert "lastDiagnosis" in app  # the diagnosis still ran with what the user may read

    reasons = {
        e["reason"] for e in json.loads(kubectl(cp, "get", "events", "-n", ns, "-o", "json").stdout)["items"]
    }
    assert {"KafkaAuthenticationFailed", "KafkaTLSUntrustedCertificate"} <= reasons
    for name in ("admin", "wrong-password", "bad-ca", "app", "wrong-host"):
        no_secret(cp, ns, sasl, name)


def mtls_policy(ns: str, name: str, mtls: Testbed, *, client_certificate: bool) -> dict[str, Any]:
    tls: dict[str, Any] = {"ca": {"name": "kafka-mtls", "key": "ca.crt"}}
    if client_certificate:
        tls["certificate"] = {"name": "kafka-mtls", "key": "tls.crt"}
        tls["key"] = {"name": "kafka-mtls", "key": "tls.key"}
    return {
        "apiVersion": "kafkahealth.io/v1alpha1",
        "kind": "KafkaHealthPolicy",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "cluster": {
                "bootstrapServers": mtls.require().bootstrap_servers.split(","),
                "security": {"protocol": "SSL", "tls": tls},
            },
            "diagnostics": {"interval": f"{INTERVAL_S}s"},
        },
    }


def test_operator_diagnoses_mtls_and_names_a_missing_client_certificate(
    k8s_control_plane: ControlPlane, operator: OperatorProcess, ns: str, mtls: Testbed
) -> None:
    cp = k8s_control_plane
    apply(cp, mtls_policy(ns, "mtls", mtls, client_certificate=True))
    apply(cp, mtls_policy(ns, "mtls-no-cert", mtls, client_certificate=False))
    ok = wait_status(cp, ns, "mtls", lambda s: "lastDiagnosis" in s, timeout=300, what="diagnosed")
    assert condition(ok, "Ready")["status"] == "True", ok
    assert condition(ok, "Degraded")["status"] == "False", ok
    refused = condition(degraded(cp, ns, "mtls-no-cert"), "Degraded")
    assert refused["reason"] == "KafkaTLSClientCertificateRefused", refused
    assert "spec.cluster.security.tls.certificate/key" in refused["message"]
    key_line = mtls.material().user_key(security.ADMIN).read_text().splitlines()[1]
    for name in ("mtls", "mtls-no-cert"):
        status = kubectl(cp, "get", "khp", name, "-n", ns, "-o", "json").stdout
        assert key_line not in status
