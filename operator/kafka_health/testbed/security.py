"""Security of the testbed's client listener: a CA, broker and client certificates, SCRAM users.

`kafka-health testbed up --security MODE` secures the listener clients use (the one in
`bootstrap_servers`); the inter-broker listener (`INTERNAL`, base port + 200) and the KRaft
controller listener stay PLAINTEXT on 127.0.0.1, with `User:ANONYMOUS` a super user so the
brokers and controllers can talk to each other under the authorizer. That is a testbed
shortcut, documented in docs/testbed.md: only loopback can reach them.

| mode | client listener | client authentication | authorizer |
|---|---|---|---|
| plaintext | PLAINTEXT | none | none |
| ssl | SSL | none (server certificate only) | none |
| sasl_plaintext | SASL_PLAINTEXT | SCRAM-SHA-512 | StandardAuthorizer |
| sasl_ssl | SASL_SSL | SCRAM-SHA-512 | StandardAuthorizer |
| mtls | SSL, ssl.client.auth=required | client certificate (CN → user) | StandardAuthorizer |

Two users exist in every secured mode: `admin` (a super user: what Kafka's tools and the
tests use) and `app` (no ACLs at first: the unprivileged user). Their SCRAM credentials are
created at format time (`kafka-storage format --add-scram`); in mTLS their certificates carry
`CN=admin` / `CN=app`, mapped to `User:admin` / `User:app` by `ssl.principal.mapping.rules`.

All material is PEM (Kafka 4 takes `ssl.keystore.type=PEM` / `ssl.truststore.type=PEM`),
generated with the `cryptography` package, into `<state dir>/security/`
with mode 0600 for keys and passwords. Certificates name `127.0.0.1` only (the address every
broker advertises), so `localhost:<port>` fails host name verification: that is on purpose,
the tests use it to prove the hostname-mismatch error.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MODES = ("plaintext", "ssl", "sasl_plaintext", "sasl_ssl", "mtls")
PROTOCOL = {
    "plaintext": "PLAINTEXT",
    "ssl": "SSL",
    "sasl_plaintext": "SASL_PLAINTEXT",
    "sasl_ssl": "SASL_SSL",
    "mtls": "SSL",
}
MECHANISM = "SCRAM-SHA-512"
ADMIN, APP = "admin", "app"
USERS = (ADMIN, APP)
AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
# CN=admin → User:admin, so SASL and mTLS name the same principals.
PRINCIPAL_RULES = "RULE:^CN=([^,]+)$/$1/,DEFAULT"


class SecurityError(RuntimeError):
    """The security material could not be made; the message names what is missing."""


def uses_sasl(mode: str) -> bool:
    return mode in ("sasl_plaintext", "sasl_ssl")


def uses_tls(mode: str) -> bool:
    return mode in ("ssl", "sasl_ssl", "mtls")


def uses_authorizer(mode: str) -> bool:
    return mode in ("sasl_plaintext", "sasl_ssl", "mtls")


def _crypto() -> Any:
    from cryptography import x509

    return x509


# ------------------------------------------------------------------------------------ certificates
@dataclass(frozen=True)
class Pem:
    """A certificate and its private key, PEM (the key unencrypted PKCS#8)."""

    cert: bytes
    key: bytes


def make_ca(common_name: str = "kafka-health testbed CA", days: int = 3650) -> Pem:
    x509 = _crypto()
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    from cryptography.x509.oid import NameOID

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return Pem(cert.public_bytes(serialization.Encoding.PEM), _key_pem(key))


def issue(
    ca: Pem,
    common_name: str,
    *,
    server: bool,
    ip_addresses: tuple[str, ...] = (),
    dns_names: tuple[str, ...] = (),
    days: float = 825,
) -> Pem:
    """A leaf certificate signed by `ca`: a server one (SANs for host name verification) or a client one."""
    import ipaddress

    x509 = _crypto()
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    ca_cert = x509.load_pem_x509_certificate(ca.cert)
    ca_key = serialization.load_pem_private_key(ca.key, password=None)
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    now = dt.datetime.now(dt.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)]))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.ExtendedKeyUsage(
                [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
                if server
                else [ExtendedKeyUsageOID.CLIENT_AUTH]
            ),
            critical=False,
        )
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_cert.public_key()), critical=False
        )
    )
    sans: list[Any] = [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ip_addresses]
    sans += [x509.DNSName(name) for name in dns_names]
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    cert = builder.sign(ca_key, hashes.SHA256())
    return Pem(cert.public_bytes(serialization.Encoding.PEM), _key_pem(key))


def _key_pem(key: Any) -> bytes:
    from cryptography.hazmat.primitives import serialization

    data: bytes = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return data


def _write_private(path: Path, data: bytes | str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = data.encode() if isinstance(data, str) else data
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(raw)
    return path


# ------------------------------------------------------------------------------------ the material
class Material:
    """The files of one testbed's security (`<state dir>/security/`), created once, reused after."""

    def __init__(self, state_dir: Path, mode: str, certificate_days: float = 825.0) -> None:
        if mode not in MODES:
            raise SecurityError(f"unknown security mode {mode!r}; one of: {', '.join(MODES)}")
        self.mode = mode
        self.dir = state_dir / "security"
        self.certificate_days = certificate_days  # of the broker certificates issued

    # files
    @property
    def ca_file(self) -> Path:
        return self.dir / "ca.pem"

    @property
    def ca_key_file(self) -> Path:
        return self.dir / "ca-key.pem"

    def broker_keystore(self, broker_id: int) -> Path:
        """Key and certificate chain of one broker, in one PEM file (`ssl.keystore.type=PEM`)."""
        return self.dir / f"broker-{broker_id}.pem"

    def user_keystore(self, user: str) -> Path:
        """A client's key and certificate in one PEM file (mTLS)."""
        return self.dir / f"{user}.pem"

    def user_cert(self, user: str) -> Path:
        return self.dir / f"{user}-cert.pem"

    def user_key(self, user: str) -> Path:
        return self.dir / f"{user}-key.pem"

    def client_properties(self, user: str = ADMIN) -> Path:
        """Kafka-style client settings for `user` (Kafka's tools: --command-config)."""
        return self.dir / ("client.properties" if user == ADMIN else f"client-{user}.properties")

    @property
    def passwords_file(self) -> Path:
        return self.dir / "passwords.json"

    def passwords(self) -> dict[str, str]:
        if not self.passwords_file.exists():
            return {}
        data: dict[str, str] = json.loads(self.passwords_file.read_text())
        return data

    def password(self, user: str) -> str:
        return self.passwords()[user]

    # creation
    def ensure(self, broker_ids: list[int]) -> None:
        """Create what is missing: the CA, each broker's certificate, users' passwords and
        certificates, and the client properties. Existing files are kept (a restarted testbed
        keeps its CA, so clients configured before still connect)."""
        if self.mode == "plaintext":
            return
        self.dir.mkdir(parents=True, exist_ok=True)
        os.chmod(self.dir, 0o700)
        if uses_tls(self.mode):
            if not self.ca_file.exists():
                ca = make_ca()
                _write_private(self.ca_key_file, ca.key)
                self.ca_file.write_bytes(ca.cert)
            ca = Pem(self.ca_file.read_bytes(), self.ca_key_file.read_bytes())
            for bid in broker_ids:
                path = self.broker_keystore(bid)
                if not path.exists():
                    leaf = issue(
                        ca,
                        f"broker-{bid}",
                        server=True,
                        ip_addresses=("127.0.0.1",),
                        days=self.certificate_days,
                    )
                    _write_private(path, leaf.key + leaf.cert + ca.cert)
            if self.mode == "mtls":
                for user in USERS:
                    if not self.user_keystore(user).exists():
                        leaf = issue(ca, user, server=False)
                        _write_private(self.user_key(user), leaf.key)
                        self.user_cert(user).write_bytes(leaf.cert)
                        _write_private(self.user_keystore(user), leaf.key + leaf.cert)
        if uses_sasl(self.mode) and not self.passwords_file.exists():
            # URL-safe and free of quotes/backslashes, so it sits in a JAAS line as it is.
            pw = {u: f"{u}-{secrets.token_urlsafe(12)}" for u in USERS}
            _write_private(self.passwords_file, json.dumps(pw, indent=2))
        for user in USERS:
            _write_private(self.client_properties(user), self.client_properties_text(user))

    def client_properties_text(self, user: str = ADMIN, *, password: str | None = None) -> str:
        """The client.properties of `user` (Kafka's names; PEM files, not JKS)."""
        lines = [
            "# kafka-health testbed: client settings (Kafka's names; `--command-config` of Kafka's tools",
            "# and of every kafka-health subcommand)",
            f"security.protocol={PROTOCOL[self.mode]}",
        ]
        if uses_tls(self.mode):
            lines += ["ssl.truststore.type=PEM", f"ssl.truststore.location={self.ca_file}"]
        if self.mode == "mtls":
            lines += ["ssl.keystore.type=PEM", f"ssl.keystore.location={self.user_keystore(user)}"]
        if uses_sasl(self.mode):
            secret = password if password is not None else self.password(user)
            lines += [
                f"sasl.mechanism={MECHANISM}",
                "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
                f'username="{user}" password="{secret}";',
            ]
        return "\n".join(lines) + "\n"

    # broker side
    def add_scram_args(self) -> list[str]:
        """`kafka-storage format` arguments creating the SCRAM users."""
        if not uses_sasl(self.mode):
            return []
        args: list[str] = []
        for user, pw in self.passwords().items():
            args += ["--add-scram", f"{MECHANISM}=[name={user},password={pw}]"]
        return args

    def broker_props(self, broker_id: int, client_listener: str) -> dict[str, Any]:
        """Settings of one broker's client listener (named `client_listener`, lower case in keys)."""
        if self.mode == "plaintext":
            return {}
        prefix = f"listener.name.{client_listener.lower()}."
        props: dict[str, Any] = {}
        if uses_tls(self.mode):
            props.update(
                {
                    f"{prefix}ssl.keystore.type": "PEM",
                    f"{prefix}ssl.keystore.location": self.broker_keystore(broker_id),
                    f"{prefix}ssl.truststore.type": "PEM",
                    f"{prefix}ssl.truststore.location": self.ca_file,
                }
            )
        if self.mode == "mtls":
            props[f"{prefix}ssl.client.auth"] = "required"
            props["ssl.principal.mapping.rules"] = PRINCIPAL_RULES
        if uses_sasl(self.mode):
            props["sasl.enabled.mechanisms"] = MECHANISM
            props[f"{prefix}{MECHANISM.lower()}.sasl.jaas.config"] = (
                "org.apache.kafka.common.security.scram.ScramLoginModule required;"
            )
        if uses_authorizer(self.mode):
            props["authorizer.class.name"] = AUTHORIZER
            # The brokers and controllers reach each other over PLAINTEXT on loopback (ANONYMOUS).
            props["super.users"] = f"User:{ADMIN};User:ANONYMOUS"
            props["allow.everyone.if.no.acl.found"] = "false"
        return props

    def controller_props(self) -> dict[str, Any]:
        """Settings of a dedicated controller: the same authorizer (CreateAcls and the metadata
        are served there); it has no client listener to secure."""
        return {
            k: v
            for k, v in self.broker_props(0, "CLIENT").items()
            if not k.startswith(("listener.", "sasl."))
        }

    def secret_values(self, user: str = ADMIN) -> dict[str, str]:
        """What a policy's Secret holds for `user`: key → value (file contents for PEM)."""
        out: dict[str, str] = {}
        if uses_tls(self.mode):
            out["ca.crt"] = self.ca_file.read_text()
        if self.mode == "mtls":
            out["tls.crt"] = self.user_cert(user).read_text()
            out["tls.key"] = self.user_key(user).read_text()
        if uses_sasl(self.mode):
            out["username"] = user
            out["password"] = self.password(user)
        return out
