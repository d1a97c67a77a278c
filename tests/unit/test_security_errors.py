"""Classification of security failures (pure). The texts are librdkafka 2.16's, as seen on the
secured testbed (tests/collect/test_secured_real.py proves them against real brokers)."""

from __future__ import annotations

import logging

import pytest

from kafka_health.collect.security_errors import (
    Kind,
    PeerCheck,
    TlsCause,
    authorization_denied,
    classify_connection_errors,
    is_authorization_failure,
    kafka_key_names,
    kind_of,
    tls_cause,
    tls_verify_failed,
)

WRONG_PASSWORD = (
    "_AUTHENTICATION",
    "sasl_ssl://127.0.0.1:37092/bootstrap: SASL authentication error: Authentication failed during "
    "authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512 (after 345ms in state AUTH_REQ)",
)
BAD_CA = (
    "_SSL",
    "sasl_ssl://127.0.0.1:37092/bootstrap: SSL handshake failed: error:0A000086:SSL routines::certificate "
    "verify failed: broker certificate could not be verified, verify that ssl.ca.location is correctly "
    "configured or root CA certificates are installed (install ca-certificates package) (after 21ms in state SSL_HANDSHAKE)",
)
SASL_ON_PLAINTEXT = (
    "_AUTHENTICATION",
    "sasl_plaintext://127.0.0.1:37292/bootstrap: SASL SCRAM-SHA-512 mechanism handshake failed: Broker: "
    "Request not valid in current SASL state: broker's supported mechanisms:  (after 19ms in state AUTH_HANDSHAKE)",
)
TLS_ON_PLAINTEXT = (
    "_TRANSPORT",
    "sasl_ssl://127.0.0.1:37292/bootstrap: SSL handshake failed: Disconnected: SSL connection closed by "
    "peer: connecting to a PLAINTEXT broker listener? (after 35ms in state SSL_HANDSHAKE)",
)
WRONG_MECHANISM = (
    "_AUTHENTICATION",
    "sasl_ssl://127.0.0.1:37092/bootstrap: SASL PLAIN mechanism handshake failed: Broker: Unsupported SASL "
    "mechanism: broker's supported mechanisms: SCRAM-SHA-512 (after 308ms in state AUTH_HANDSHAKE)",
)
ALL_DOWN = ("_ALL_BROKERS_DOWN", "1/1 brokers are down")
REFUSED = ("_TRANSPORT", "127.0.0.1:1/bootstrap: Connect to ipv4#127.0.0.1:1 failed: Connection refused")


@pytest.mark.parametrize(
    ("errors", "kind", "fix"),
    [
        ([WRONG_PASSWORD, ALL_DOWN], Kind.AUTHENTICATION, "spec.cluster.security.sasl.username/password"),
        ([WRONG_MECHANISM], Kind.AUTHENTICATION, "sasl.mechanism"),
        ([BAD_CA, ALL_DOWN], Kind.TLS, "spec.cluster.security.tls.ca"),
        ([SASL_ON_PLAINTEXT], Kind.PROTOCOL, "security.protocol"),
        ([TLS_ON_PLAINTEXT, ALL_DOWN], Kind.PROTOCOL, "spec.cluster.security.protocol"),
        (
            [("_SSL", "ssl://h:1/bootstrap: SSL handshake failed: ...:wrong version number")],
            Kind.PROTOCOL,
            "protocol",
        ),
        (
            [("_SSL", "ssl://h:1/0: SSL handshake failed: tlsv13 alert certificate required")],
            Kind.TLS,
            "tls.certificate/key",
        ),
        (
            [
                (
                    "_TRANSPORT",
                    "ssl://127.0.0.1:41092/bootstrap: Receive failed: error:0A000412:SSL routines::ssl/tls alert "
                    "bad certificate: SSL alert number 42 (after 2ms in state APIVERSION_QUERY)",
                ),
                ALL_DOWN,
            ],
            Kind.TLS,
            "ssl.keystore.location",
        ),
    ],
)
def test_connection_errors(errors: list[tuple[str, str]], kind: Kind, fix: str) -> None:
    found = classify_connection_errors(errors)
    assert found is not None and found.kind is kind
    assert found.message.startswith(f"{kind}: ")
    assert fix in found.message
    assert "(after " not in found.message  # timing noise removed
    assert kind_of(found.message) is kind


def test_plain_unreachable_is_not_a_security_failure() -> None:
    assert classify_connection_errors([REFUSED, ALL_DOWN]) is None
    assert classify_connection_errors([]) is None
    assert kind_of("_TRANSPORT: Failed to get metadata: Local: Broker transport failure") is None


def test_protocol_mismatch_wins_over_the_consequences() -> None:
    """A mismatch explains the other failures, so it is the one reported."""
    found = classify_connection_errors([BAD_CA, SASL_ON_PLAINTEXT, WRONG_PASSWORD])
    assert found is not None and found.kind is Kind.PROTOCOL


@pytest.mark.parametrize(
    ("part", "reason", "expect"),
    [
        (
            "quorum",
            "ClusterAuthorizationFailedError: [Error 31] ClusterAuthorizationFailedError",
            "lacks DESCRIBE on CLUSTER kafka-cluster",
        ),
        (
            "broker_registrations",
            "CLUSTER_AUTHORIZATION_FAILED: Broker: Cluster authorization failed",
            "DESCRIBE on CLUSTER",
        ),
        (
            "configs:orders",
            "TOPIC_AUTHORIZATION_FAILED: Broker: Topic authorization failed",
            "lacks DESCRIBE_CONFIGS on TOPIC orders",
        ),
        (
            "group:billing",
            "GROUP_AUTHORIZATION_FAILED: Broker: Group authorization failed",
            "DESCRIBE on GROUP billing",
        ),
        ("group:billing", "TOPIC_AUTHORIZATION_FAILED: x", "DESCRIBE on TOPIC billing"),
        ("elect_leaders", "CLUSTER_AUTHORIZATION_FAILED: x", "ALTER on CLUSTER kafka-cluster"),
        (
            "alter_consumer_group_offsets:billing",
            "GROUP_AUTHORIZATION_FAILED: x",
            "lacks READ on GROUP billing",
        ),
    ],
)
def test_authorization_names_operation_and_resource(part: str, reason: str, expect: str) -> None:
    message = authorization_denied(part, reason)
    assert message is not None and expect in message
    assert "kafka-acls --add" in message
    assert kind_of(message) is Kind.AUTHORIZATION


def test_offset_commit_refused_on_the_topic_names_read_on_that_topic() -> None:
    message = authorization_denied(
        "alter_consumer_group_offsets:billing", "TOPIC_AUTHORIZATION_FAILED: x", "orders"
    )
    assert message is not None and "lacks READ on TOPIC orders" in message
    assert "--operation Read --topic orders" in message


def test_other_errors_are_not_authorization() -> None:
    assert authorization_denied("quorum", "KafkaTimeoutError: timed out") is None


def test_an_authorization_code_is_matched_as_a_whole_word() -> None:
    """Codes are matched as the names the reason carries, wherever the call put them (after a
    partition's prefix, bare), never as part of another word or of the message's wording."""
    assert authorization_denied("offsets:t", "earliest offset: TOPIC_AUTHORIZATION_FAILED: x") is not None
    assert authorization_denied("partitions:t", "TOPIC_AUTHORIZATION_FAILED", "t") is not None
    assert authorization_denied("quorum", "MY_CLUSTER_AUTHORIZATION_FAILED_X: x") is None
    assert authorization_denied("quorum", "UNKNOWN: Broker: Cluster authorization failed") is None
    assert is_authorization_failure("log dir: TransactionalIdAuthorizationFailedError: x")
    assert is_authorization_failure("DELEGATION_TOKEN_AUTHORIZATION_FAILED: x")
    assert not is_authorization_failure("SASL_AUTHENTICATION_FAILED: authorization failed")


def test_bad_ca_and_hostname_mismatch_share_a_text_so_the_message_names_both_fixes() -> None:
    """librdkafka 2.16 reports a host name the broker certificate does not name (here `localhost`
    against a certificate for 127.0.0.1, measured on the SASL_SSL testbed) with the very text of
    a CA that did not sign it: the message cannot pick one, so it names both settings."""
    hostname = ("_SSL", BAD_CA[1].replace("127.0.0.1", "localhost"))
    for errors in ([BAD_CA], [hostname]):
        found = classify_connection_errors(errors)
        assert found is not None and found.kind is Kind.TLS
        for setting in (
            "spec.cluster.security.tls.ca",
            "ssl.truststore.location",
            "spec.cluster.security.tls.verifyHostname",
            "ssl.endpoint.identification.algorithm",
        ):
            assert setting in found.message


# ------------------------------------------------------------------------------------ TLS causes
# OpenSSL's verify results as Python's ssl reported them against the mTLS / SSL testbeds
# (tests/secured/test_tls_causes.py proves the whole path on real brokers).
UNTRUSTED_CHECK = PeerCheck("127.0.0.1:37092", 19, "self-signed certificate in certificate chain")
HOSTNAME_CHECK = PeerCheck(
    "localhost:37092", 62, "Hostname mismatch, certificate is not valid for 'localhost'.", ("IP:127.0.0.1",)
)
EXPIRED_CHECK = PeerCheck("127.0.0.1:37092", 10, "certificate has expired", (), "2026-01-01 00:00:00 UTC")
ROGUE_CLIENT = (
    "_SSL",
    "ssl://127.0.0.1:37092/bootstrap: Receive failed: error:0A000412:SSL routines::ssl/tls alert bad "
    "certificate: SSL alert number 42: client SSL authentication might be required (see ssl.key.location "
    "and ssl.certificate.location and consult the broker logs for more information) (after 2ms in state X)",
)
LIBRDKAFKA_ONLY = ("ssl.ca.location", "ssl.key.location", "ssl.certificate.location", "ssl.ca.pem")


@pytest.mark.parametrize(
    ("error", "check", "cause", "fix"),
    [
        (BAD_CA, UNTRUSTED_CHECK, TlsCause.UNTRUSTED, "ssl.truststore.location"),
        (
            ("_SSL", BAD_CA[1].replace("127.0.0.1", "localhost")),
            HOSTNAME_CHECK,
            TlsCause.HOSTNAME,
            "ssl.endpoint.identification.algorithm=",
        ),
        (BAD_CA, EXPIRED_CHECK, TlsCause.EXPIRED, "ssl.keystore.location"),
        (ROGUE_CLIENT, None, TlsCause.CLIENT_REFUSED, "ssl.keystore.location"),
    ],
)
def test_each_tls_cause_has_its_message_and_names_the_kafka_key(
    error: tuple[str, str], check: PeerCheck | None, cause: TlsCause, fix: str
) -> None:
    asked: list[tuple[str, int]] = []

    def check_peer(host: str, port: int) -> PeerCheck | None:
        asked.append((host, port))
        return check

    found = classify_connection_errors([error, ALL_DOWN], check_peer)
    assert found is not None and found.kind is Kind.TLS and found.cause is cause
    assert tls_cause(found.message) is cause and kind_of(found.message) is Kind.TLS
    assert fix in found.message
    assert not any(key in found.message for key in LIBRDKAFKA_ONLY), found.message
    if check is not None:  # the broker of the error text was checked, once
        assert asked == [(check.address.split(":")[0], 37092)]


def test_hostname_mismatch_names_what_the_certificate_carries() -> None:
    found = tls_verify_failed("localhost", HOSTNAME_CHECK)
    assert found is not None
    assert "does not name the host localhost" in found.message
    assert "the certificate carries IP:127.0.0.1" in found.message


def test_expired_names_the_end_of_validity() -> None:
    found = tls_verify_failed("127.0.0.1", EXPIRED_CHECK)
    assert found is not None and "notAfter: 2026-01-01 00:00:00 UTC" in found.message


@pytest.mark.parametrize("check", [None, PeerCheck("127.0.0.1:37092", 0, "ok", ("IP:127.0.0.1",))])
def test_an_inconclusive_check_names_both_fixes_and_no_librdkafka_key(check: PeerCheck | None) -> None:
    found = classify_connection_errors([BAD_CA], lambda host, port: check)
    assert found is not None and found.cause is None and tls_cause(found.message) is None
    assert "ssl.truststore.location" in found.message
    assert "ssl.endpoint.identification.algorithm" in found.message
    assert "certificate verify failed" in found.message
    assert not any(key in found.message for key in LIBRDKAFKA_ONLY), found.message


def test_another_verify_result_is_told_as_it_is() -> None:
    found = tls_verify_failed("h", PeerCheck("h:1", 26, "unsupported certificate purpose"))
    assert found is not None and found.cause is None
    assert "unsupported certificate purpose" in found.message


def test_librdkafka_key_names_become_kafka_names() -> None:
    text = "KafkaError: Failed to create client: ssl.ca.location failed: error:05800088:x509 routines"
    assert kafka_key_names(text) == (
        "KafkaError: Failed to create client: ssl.truststore.location failed: error:05800088:x509 routines"
    )
    assert kafka_key_names("ssl.key.location and ssl.certificate.location") == (
        "ssl.keystore.location and ssl.keystore.location"
    )


def test_librdkafka_log_lines_lose_the_hint_naming_its_own_key() -> None:
    from kafka_health.collect.logs import KafkaKeyNamesFilter

    record = logging.LogRecord(
        "kafka_health.collect.librdkafka", logging.WARNING, "", 0, "FAIL: %s", (BAD_CA[1],), None
    )
    assert KafkaKeyNamesFilter().filter(record)
    assert record.getMessage().startswith("FAIL: sasl_ssl://127.0.0.1:37092/bootstrap: SSL handshake failed")
    assert "certificate verify failed" in record.getMessage()
    assert not any(key in record.getMessage() for key in LIBRDKAFKA_ONLY), record.getMessage()
