"""`--command-config`: Kafka's client.properties → ConnectionConfig (pure; no server)."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kafka_health.collect.client_properties import (
    ClientPropertiesError,
    load,
    parse_client_properties,
    parse_jaas,
    parse_properties,
)
from kafka_health.testbed import security

SECRET = "s3cr3t-Pa55"
SCRAM = (
    f'org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="{SECRET}";'
)


def parse(text: str) -> dict[str, str]:
    return dict(parse_client_properties(text, source="c.properties").options)


def error(text: str) -> str:
    with pytest.raises(ClientPropertiesError) as info:
        parse_client_properties(text, source="c.properties")
    message = str(info.value)
    assert SECRET not in message
    return message


# ------------------------------------------------------------------------------ .properties syntax
def test_properties_syntax_separators_comments_continuations_escapes() -> None:
    text = (
        "# comment\n"
        "! another\n"
        "\n"
        "a=1\n"
        "b : 2\n"
        "c 3\n"
        "  d=  4\n"
        "e=five \\\n"
        "    six\n"
        "f=x\\=y\\:z\n"
        "g=tab\\there\n"
        "h=\\u0041BC\n"
        "i=\n"
        "j=:colon\n"
        "k\\ key=spaced\n"
    )
    got = {k: v for k, (v, _) in parse_properties(text).items()}
    assert got == {
        "a": "1",
        "b": "2",
        "c": "3",
        "d": "4",
        "e": "five six",
        "f": "x=y:z",
        "g": "tab\there",
        "h": "ABC",
        "i": "",
        "j": ":colon",
        "k key": "spaced",
    }
    assert parse_properties(text)["e"][1] == 8  # the line the entry starts on


def test_even_backslashes_do_not_continue() -> None:
    got = parse_properties("a=x\\\\\nb=y\n")
    assert got["a"][0] == "x\\" and got["b"][0] == "y"


# ------------------------------------------------------------------------------ JAAS
def test_jaas_quoted_and_bare_options() -> None:
    module, opts = parse_jaas(
        'org.apache.kafka.common.security.plain.PlainLoginModule required username=bob password="p a\\"ss";',
        "x",
    )
    assert module.endswith("PlainLoginModule")
    assert opts == {"username": "bob", "password": 'p a"ss'}


@pytest.mark.parametrize(
    "jaas",
    [
        f'username="admin" password="{SECRET}";',  # no module
        f'org.apache.kafka.common.security.scram.ScramLoginModule required username=admin password="{SECRET}',
    ],
)
def test_bad_jaas_never_echoes_the_value(jaas: str) -> None:
    msg = error(f"security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\nsasl.jaas.config={jaas}\n")
    assert "sasl.jaas.config" in msg and "c.properties line 3" in msg


# ------------------------------------------------------------------------------ mapping
def test_sasl_ssl_scram_with_pem_truststore() -> None:
    got = parse(
        "security.protocol=sasl_ssl\n"
        "sasl.mechanism=SCRAM-SHA-512\n"
        f"sasl.jaas.config={SCRAM}\n"
        "ssl.truststore.type=PEM\n"
        "ssl.truststore.location=/etc/kafka/ca.pem\n"
    )
    assert got == {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "admin",
        "sasl.password": SECRET,
        "ssl.ca.location": "/etc/kafka/ca.pem",
    }


def test_plain_and_librdkafka_style_username_password() -> None:
    got = parse(
        f"security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.username=u\nsasl.password={SECRET}\n"
    )
    assert got["sasl.username"] == "u" and got["sasl.password"] == SECRET
    assert got["security.protocol"] == "SASL_PLAINTEXT"


def test_mtls_keystore_location_gives_certificate_and_key() -> None:
    got = parse(
        "security.protocol=SSL\n"
        "ssl.truststore.type=PEM\nssl.truststore.location=/ca.pem\n"
        "ssl.keystore.type=PEM\nssl.keystore.location=/me.pem\n"
        f"ssl.key.password={SECRET}\n"
        "ssl.endpoint.identification.algorithm=\n"
    )
    assert got == {
        "security.protocol": "SSL",
        "ssl.ca.location": "/ca.pem",
        "ssl.certificate.location": "/me.pem",
        "ssl.key.location": "/me.pem",
        "ssl.key.password": SECRET,
        "ssl.endpoint.identification.algorithm": "none",
    }


def test_hostname_verification_https() -> None:
    got = parse("security.protocol=SSL\nssl.endpoint.identification.algorithm=HTTPS\n")
    assert got["ssl.endpoint.identification.algorithm"] == "https"


def test_default_protocol_is_plaintext_and_bootstrap_is_kept() -> None:
    props = parse_client_properties("bootstrap.servers=h:9092\n")
    assert dict(props.options) == {"security.protocol": "PLAINTEXT"}
    assert props.bootstrap_servers == "h:9092"
    assert props.connection(None).bootstrap_servers == "h:9092"
    assert props.connection("other:1").bootstrap_servers == "other:1"  # the command line wins


def test_inline_pem_is_rewrapped_and_written_private(tmp_path: Path) -> None:
    ca = security.make_ca("inline")
    body = ca.cert.decode()
    one_line = " \\\n  ".join(body.strip().splitlines())  # how Kafka's docs write inline PEM
    key_line = " \\\n  ".join(ca.key.decode().strip().splitlines())
    props = parse_client_properties(
        "security.protocol=SSL\n"
        f"ssl.truststore.type=PEM\nssl.truststore.certificates={one_line}\n"
        "ssl.keystore.type=PEM\n"
        f"ssl.keystore.certificate.chain={one_line}\n"
        f"ssl.keystore.key={key_line}\n"
    )
    conn = props.connection("h:1", tmp_path / "pem")
    ca_file = Path(conn.options["ssl.ca.location"])
    assert ca_file.read_text() == body  # byte-identical PEM after the round trip
    key_file = Path(conn.options["ssl.key.location"])
    assert key_file.read_text() == ca.key.decode()
    assert stat.S_IMODE(os.stat(key_file).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(tmp_path / "pem").st_mode) == 0o700


# ------------------------------------------------------------------------------ refusals
@pytest.mark.parametrize(
    ("text", "expect"),
    [
        ("security.protocol=SSL\nssl.truststore.location=/t.jks\n", "ssl.truststore.type is JKS"),
        (
            "security.protocol=SSL\nssl.truststore.type=PKCS12\nssl.truststore.location=/t.p12\n",
            "convert the store to PEM",
        ),
        (
            f"security.protocol=SSL\nssl.truststore.password={SECRET}\n",
            "unsupported key ssl.truststore.password",
        ),
        ("security.protocol=SSL\nssl.keystore.password=x\n", "ssl.key.password"),
        ("request.timeout.ms=5000\n", "unsupported key request.timeout.ms: remove it"),
        ("security.protocol=SASL_SSL\n", "sasl.mechanism is missing (Kafka defaults to GSSAPI)"),
        ("security.protocol=SASL_SSL\nsasl.mechanism=GSSAPI\n", "sasl.mechanism is not supported"),
        ("security.protocol=SASL_SSL\nsasl.mechanism=OAUTHBEARER\n", "sasl.mechanism is not supported"),
        ("security.protocol=TLS\n", "security.protocol must be"),
        (f"sasl.mechanism=PLAIN\nsasl.jaas.config={SCRAM}\n", "security.protocol is PLAINTEXT"),
        ("ssl.truststore.type=PEM\nssl.truststore.location=/ca\n", "set security.protocol=SSL"),
        (
            f"security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\nsasl.jaas.config={SCRAM}\n",
            "does not match sasl.mechanism=PLAIN",
        ),
        (
            "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\nsasl.jaas.config="
            f'com.sun.security.auth.module.Krb5LoginModule required password="{SECRET}";\n',
            "login module com.sun.security.auth.module.Krb5LoginModule is not supported",
        ),
        (
            "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\nsasl.jaas.config="
            f'org.apache.kafka.common.security.scram.ScramLoginModule required username="a" password="{SECRET}" tokenauth="true";\n',
            "options ['tokenauth'] are not supported",
        ),
        (
            "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\nsasl.jaas.config="
            'org.apache.kafka.common.security.scram.ScramLoginModule required username="a";\n',
            "the SASL password is missing",
        ),
        (
            f"security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\nsasl.password={SECRET}\n",
            "the SASL username is missing",
        ),
        (
            f"security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\nsasl.jaas.config={SCRAM}\nsasl.password={SECRET}\n",
            "not both",
        ),
        (
            "security.protocol=SSL\nssl.keystore.type=PEM\nssl.keystore.certificate.chain=-----BEGIN CERTIFICATE-----\n",
            "needs ssl.keystore.key too",
        ),
        (
            f"security.protocol=SSL\nssl.keystore.type=PEM\nssl.keystore.certificate.chain=x\nssl.keystore.key={SECRET}\n",
            "is not PEM",
        ),
        (f"security.protocol=SSL\nssl.key.password={SECRET}\n", "ssl.key.password without a client key"),
        ("security.protocol=SSL\nssl.endpoint.identification.algorithm=dns\n", "must be https"),
    ],
)
def test_refusals_name_key_and_fix_never_a_value(text: str, expect: str) -> None:
    assert expect in error(text)


def test_no_bootstrap_anywhere() -> None:
    with pytest.raises(ClientPropertiesError, match="--bootstrap-servers"):
        parse_client_properties("security.protocol=PLAINTEXT\n").connection(None)


def test_secrets_are_redacted_in_the_connection_repr() -> None:
    conn = parse_client_properties(
        f"security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\nsasl.jaas.config={SCRAM}\n"
    ).connection("h:1")
    assert SECRET not in repr(conn)
    assert SECRET not in repr(
        parse_client_properties(
            f"security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\nsasl.username=u\nsasl.password={SECRET}\n"
        )
    )
    assert conn.secrets == [SECRET]


def test_unreadable_file(tmp_path: Path) -> None:
    with pytest.raises(ClientPropertiesError, match="cannot read"):
        load(tmp_path / "absent.properties")


def test_testbed_client_properties_parse(tmp_path: Path) -> None:
    """What `testbed up --security` writes is what `--command-config` reads."""
    for mode in ("ssl", "sasl_plaintext", "sasl_ssl", "mtls"):
        material = security.Material(tmp_path / mode, mode)
        text = material.client_properties_text(password=SECRET) if security.uses_sasl(mode) else None
        if text is None:
            material.dir.mkdir(parents=True)
            text = material.client_properties_text()
        got = parse(text)
        assert got["security.protocol"] == security.PROTOCOL[mode]
        if security.uses_sasl(mode):
            assert got["sasl.password"] == SECRET and got["sasl.username"] == "admin"
        if mode == "mtls":
            assert got["ssl.certificate.location"] == str(material.user_keystore("admin"))


# ------------------------------------------------------------------------------ the CLI option
def test_cli_usage_error_names_key_not_secret(tmp_path: Path) -> None:
    from kafka_health.cli.main import app

    bad = tmp_path / "client.properties"
    bad.write_text(f"security.protocol=SASL_SSL\nsasl.mechanism=GSSAPI\nsasl.jaas.config={SCRAM}\n")
    for args in (
        ["diagnose", "-b", "127.0.0.1:1", "--command-config", str(bad)],
        ["elect-leaders", "-b", "127.0.0.1:1", "--command-config", str(bad)],
        [
            "reset-offsets",
            "-b",
            "127.0.0.1:1",
            "-g",
            "g",
            "-t",
            "t",
            "--to-earliest",
            "--command-config",
            str(bad),
        ],
    ):
        result = CliRunner().invoke(app, args)
        out = result.output + (result.stderr if result.stderr_bytes is not None else "")
        assert result.exit_code == 2, out
        assert "sasl.mechanism" in out and SECRET not in out
        # A usage error stops the command before anything starts: no Spark JVM for `diagnose`.
        assert not [t for t in threading.enumerate() if t.name == "spark-start"], args


def test_cli_reads_the_env_var(tmp_path: Path) -> None:
    from kafka_health.cli.main import app

    bad = tmp_path / "client.properties"
    bad.write_text(f"security.protocol=SSL\nssl.truststore.password={SECRET}\n")
    result = CliRunner().invoke(
        app, ["elect-leaders", "-b", "127.0.0.1:1"], env={"KAFKA_HEALTH_COMMAND_CONFIG": str(bad)}
    )
    assert result.exit_code == 2
    assert "ssl.truststore.password" in result.output and SECRET not in result.output
