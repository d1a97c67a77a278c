"""Kafka's `client.properties` (what Kafka's tools take with `--command-config`) → `ConnectionConfig`.

A pure function of the file's text: `parse_client_properties(text, source=...)` returns the
librdkafka settings (`ConnectionConfig`'s names) plus the PEM blocks that were given inline
(`ssl.truststore.certificates`, `ssl.keystore.certificate.chain`, `ssl.keystore.key`): the
caller writes those to private files (`materialise`) because both clients take files.

Supported keys (Kafka's names):

| key | becomes |
|---|---|
| security.protocol | security.protocol |
| sasl.mechanism | sasl.mechanism (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512) |
| sasl.jaas.config | sasl.username / sasl.password (ScramLoginModule or PlainLoginModule `username="…" password="…"`) |
| sasl.username, sasl.password | as they are (librdkafka's spelling, instead of sasl.jaas.config) |
| ssl.truststore.location (+ ssl.truststore.type=PEM) | ssl.ca.location |
| ssl.truststore.certificates (+ type PEM) | ssl.ca.location (a file written from the inline PEM) |
| ssl.keystore.location (+ ssl.keystore.type=PEM: key and certificate chain in one file) | ssl.certificate.location and ssl.key.location |
| ssl.keystore.certificate.chain, ssl.keystore.key (+ type PEM) | the same, from inline PEM |
| ssl.key.password | ssl.key.password |
| ssl.endpoint.identification.algorithm (`https` or empty) | ssl.endpoint.identification.algorithm (`https` / `none`) |
| bootstrap.servers | used when the command line gives none |

Anything else is refused with the key and the fix (JKS/PKCS12 stores: convert to PEM). Error
messages name keys and line numbers, never values: a value may be a secret.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from kafka_health.collect.connection import ConnectionConfig, ConnectionConfigError

ENV_VAR = "KAFKA_HEALTH_COMMAND_CONFIG"

SUPPORTED = (
    "security.protocol",
    "sasl.mechanism",
    "sasl.jaas.config",
    "sasl.username",
    "sasl.password",
    "ssl.truststore.location",
    "ssl.truststore.type",
    "ssl.truststore.certificates",
    "ssl.keystore.location",
    "ssl.keystore.type",
    "ssl.keystore.certificate.chain",
    "ssl.keystore.key",
    "ssl.key.password",
    "ssl.endpoint.identification.algorithm",
    "bootstrap.servers",
)
SECRET_PROPERTIES = frozenset(
    {"sasl.jaas.config", "sasl.password", "ssl.key.password", "ssl.keystore.key", "ssl.truststore.password"}
)
# Keys Kafka's tools know that have a specific fix here.
_FIXES = {
    "ssl.truststore.password": "a PEM truststore takes no password: remove it "
    "(with a JKS/PKCS12 truststore, export the CA as PEM and set ssl.truststore.type=PEM)",
    "ssl.keystore.password": "a PEM keystore takes no store password: remove it "
    "(an encrypted key's password is ssl.key.password)",
    "sasl.login.callback.handler.class": "login callback handlers (OAUTHBEARER, GSSAPI) are not supported: "
    "use SCRAM-SHA-512, SCRAM-SHA-256 or PLAIN",
    "sasl.kerberos.service.name": "GSSAPI (Kerberos) is not supported: use SCRAM-SHA-512, SCRAM-SHA-256 or PLAIN",
    "ssl.protocol": "the TLS version is negotiated: remove it",
    "ssl.enabled.protocols": "the TLS version is negotiated: remove it",
}

_LOGIN_MODULES = {
    "org.apache.kafka.common.security.scram.ScramLoginModule": ("SCRAM-SHA-256", "SCRAM-SHA-512"),
    "org.apache.kafka.common.security.plain.PlainLoginModule": ("PLAIN",),
}


class ClientPropertiesError(ConnectionConfigError):
    """The file cannot be used; the message names the file, the key and the fix, never a value."""


@dataclass(frozen=True)
class ClientProperties:
    """The settings read: librdkafka options (no bootstrap servers), the file's own
    bootstrap.servers if any, and inline PEM blocks still to be written to files
    (`ssl.ca.location` / `ssl.certificate.location` / `ssl.key.location` → PEM text)."""

    options: Mapping[str, str] = field(repr=False)
    bootstrap_servers: str | None = None
    inline_pem: Mapping[str, str] = field(default_factory=dict, repr=False)

    def connection(self, bootstrap_servers: str | None, pem_dir: Path | None = None) -> ConnectionConfig:
        """The ConnectionConfig for `bootstrap_servers` (default: the file's); inline PEM blocks
        are written into `pem_dir` (mode 0600) first."""
        servers = bootstrap_servers or self.bootstrap_servers
        if not servers:
            raise ClientPropertiesError(
                "no bootstrap servers: give --bootstrap-servers (or bootstrap.servers in the file)"
            )
        options = dict(self.options)
        if self.inline_pem:
            if pem_dir is None:
                raise ClientPropertiesError("inline PEM settings need a directory to write them to")
            options.update(materialise(self.inline_pem, pem_dir))
        return ConnectionConfig.from_dict({"bootstrap.servers": servers, **options})


# ------------------------------------------------------------------------------------ .properties
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def parse_properties(text: str) -> dict[str, tuple[str, int]]:
    """Java `.properties` text → key → (value, line number). Comments (# !), `=`, `:` or
    whitespace separators, backslash line continuations and escapes (\\t \\n \\uXXXX …)."""
    out: dict[str, tuple[str, int]] = {}
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        start = i
        line = lines[i].lstrip()
        i += 1
        if not line or line[0] in "#!":
            continue
        # Continuation: an odd number of trailing backslashes joins the next line (its leading blanks dropped).
        while _continues(line) and i <= len(lines):
            line = line[:-1] + (lines[i].lstrip() if i < len(lines) else "")
            i += 1
        key, value = _split(line)
        out[_unescape(key)] = (_unescape(value), start + 1)
    return out


def _continues(line: str) -> bool:
    trailing = len(line) - len(line.rstrip("\\"))
    return trailing % 2 == 1


def _split(line: str) -> tuple[str, str]:
    """Java's rule: the key ends at the first unescaped `=`, `:` or blank; then blanks, one
    optional `=`/`:`, and blanks again separate it from the value."""
    j = 0
    while j < len(line):
        c = line[j]
        if c == "\\":
            j += 2
            continue
        if c in "=: \t\f":
            break
        j += 1
    rest = line[j:].lstrip(" \t\f")
    if rest[:1] in ("=", ":"):
        rest = rest[1:].lstrip(" \t\f")
    return line[:j], rest


def _unescape(s: str) -> str:
    out: list[str] = []
    j = 0
    while j < len(s):
        c = s[j]
        if c != "\\" or j + 1 >= len(s):
            out.append(c)
            j += 1
            continue
        n = s[j + 1]
        if n == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", s[j + 2 : j + 6]):
            out.append(chr(int(s[j + 2 : j + 6], 16)))
            j += 6
            continue
        out.append(_ESCAPES.get(n, n))
        j += 2
    return "".join(out)


# ------------------------------------------------------------------------------------ JAAS
_JAAS = re.compile(
    r"^\s*(?P<module>[\w.$]+)\s+(?P<flag>required|requisite|sufficient|optional)(?P<opts>.*?);?\s*$", re.S
)
_OPTION = re.compile(r'\s*(?P<key>[\w.-]+)\s*=\s*(?:"(?P<quoted>(?:[^"\\]|\\.)*)"|(?P<bare>[^\s";]+))', re.S)


def parse_jaas(value: str, where: str) -> tuple[str, dict[str, str]]:
    """`<LoginModule> required key="value" …;` → (module, options). Errors never quote the value."""
    m = _JAAS.match(value)
    if not m:
        raise ClientPropertiesError(
            f"{where}: sasl.jaas.config is not a JAAS line; write it as "
            'org.apache.kafka.common.security.scram.ScramLoginModule required username="USER" password="PASSWORD";'
        )
    opts: dict[str, str] = {}
    rest = m.group("opts")
    pos = 0
    while pos < len(rest) and rest[pos:].strip():
        om = _OPTION.match(rest, pos)
        if not om:
            raise ClientPropertiesError(
                f'{where}: sasl.jaas.config has an option that is not key="value" (quote values; end with ;)'
            )
        quoted = om.group("quoted")
        opts[om.group("key")] = re.sub(r"\\(.)", r"\1", quoted) if quoted is not None else om.group("bare")
        pos = om.end()
    return m.group("module"), opts


# ------------------------------------------------------------------------------------ mapping
@dataclass(frozen=True)
class _Props:
    """The parsed file (key → (value, line)) and its name, for the messages."""

    raw: Mapping[str, tuple[str, int]]
    source: str

    def __contains__(self, key: object) -> bool:
        return key in self.raw

    def where(self, key: str) -> str:
        return f"{self.source} line {self.raw[key][1]}"

    def get(self, key: str) -> str | None:
        return self.raw[key][0].strip() if key in self.raw else None


def parse_client_properties(text: str, source: str = "client properties") -> ClientProperties:
    """Kafka client.properties text → librdkafka settings (see the module doc for the keys)."""
    props = _Props(parse_properties(text), source)
    _refuse_unsupported(props)
    protocol = _protocol(props)
    options: dict[str, str] = {"security.protocol": protocol}
    options.update(_sasl(props, protocol))
    tls_options, inline = _tls(props, protocol)
    options.update(tls_options)
    return ClientProperties(
        options=options, bootstrap_servers=props.get("bootstrap.servers") or None, inline_pem=inline
    )


def _refuse_unsupported(props: _Props) -> None:
    for key in props.raw:
        if key in SUPPORTED:
            continue
        fix = _FIXES.get(key)
        if fix is None:
            fix = "remove it; supported keys: " + ", ".join(SUPPORTED)
        raise ClientPropertiesError(f"{props.where(key)}: unsupported key {key}: {fix}")


def _protocol(props: _Props) -> str:
    protocol = (props.get("security.protocol") or "PLAINTEXT").upper()
    if protocol not in ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"):
        raise ClientPropertiesError(
            f"{props.where('security.protocol')}: security.protocol must be PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL"
        )
    return protocol


# ------------------------------------------------------------------------------------ SASL
def _sasl(props: _Props, protocol: str) -> dict[str, str]:
    """sasl.mechanism, sasl.username and sasl.password for a SASL protocol (none otherwise)."""
    sasl_keys = [
        k for k in ("sasl.mechanism", "sasl.jaas.config", "sasl.username", "sasl.password") if k in props
    ]
    if not protocol.startswith("SASL_"):
        if sasl_keys:
            raise ClientPropertiesError(
                f"{props.where(sasl_keys[0])}: {sasl_keys[0]} is set but security.protocol is {protocol}: "
                "set security.protocol=SASL_SSL (or SASL_PLAINTEXT), or remove the sasl.* keys"
            )
        return {}
    mechanism = _mechanism(props)
    username, password = _credentials(props, mechanism)
    return {"sasl.mechanism": mechanism, "sasl.username": username, "sasl.password": password}


def _mechanism(props: _Props) -> str:
    """The SASL mechanism; Kafka's default, GSSAPI, when none is set (refused, like any other)."""
    given = "sasl.mechanism" in props
    mechanism = (props.get("sasl.mechanism") or ("" if given else "GSSAPI")).upper()
    if mechanism not in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"):
        at = props.where("sasl.mechanism") if given else props.source
        raise ClientPropertiesError(
            f"{at}: sasl.mechanism {'is not supported' if given else 'is missing (Kafka defaults to GSSAPI)'}: "
            "set sasl.mechanism=SCRAM-SHA-512, SCRAM-SHA-256 or PLAIN"
        )
    return mechanism


def _credentials(props: _Props, mechanism: str) -> tuple[str, str]:
    """The user name and password, from sasl.jaas.config or sasl.username/sasl.password."""
    username, password = props.get("sasl.username"), props.get("sasl.password")
    if "sasl.jaas.config" in props:
        if username is not None or password is not None:
            raise ClientPropertiesError(
                f"{props.where('sasl.jaas.config')}: give either sasl.jaas.config or sasl.username/sasl.password, not both"
            )
        username, password = _jaas_credentials(props, mechanism)
        missing_in = "sasl.jaas.config"
    else:
        missing_in = "sasl.username/sasl.password (or sasl.jaas.config)"
    if not username or password is None or password == "":
        which = "username" if not username else "password"
        raise ClientPropertiesError(f"{props.source}: the SASL {which} is missing: set it in {missing_in}")
    return username, password


def _jaas_credentials(props: _Props, mechanism: str) -> tuple[str | None, str | None]:
    """username and password of sasl.jaas.config, whose login module must match `mechanism`."""
    where = props.where("sasl.jaas.config")
    module, jaas = parse_jaas(props.raw["sasl.jaas.config"][0], where)
    allowed = _LOGIN_MODULES.get(module)
    if allowed is None:
        raise ClientPropertiesError(
            f"{where}: login module {module} is not supported: use "
            "org.apache.kafka.common.security.scram.ScramLoginModule (SCRAM) or "
            "org.apache.kafka.common.security.plain.PlainLoginModule (PLAIN)"
        )
    if mechanism not in allowed:
        use = (
            "PlainLoginModule for PLAIN" if mechanism == "PLAIN" else "ScramLoginModule for SCRAM-SHA-256/512"
        )
        raise ClientPropertiesError(
            f"{where}: login module {module.rsplit('.', 1)[-1]} does not match sasl.mechanism={mechanism}: use "
            + use
        )
    unknown = sorted(set(jaas) - {"username", "password"})
    if unknown:
        raise ClientPropertiesError(
            f"{where}: sasl.jaas.config options {unknown} are not supported (only username and password)"
        )
    return jaas.get("username"), jaas.get("password")


# ------------------------------------------------------------------------------------ TLS
def _tls(props: _Props, protocol: str) -> tuple[dict[str, str], dict[str, str]]:
    """The TLS options for a TLS protocol, and the inline PEM blocks still to be written."""
    ssl_keys = [k for k in props.raw if k.startswith("ssl.")]
    if not protocol.endswith("SSL"):
        if ssl_keys:
            raise ClientPropertiesError(
                f"{props.where(ssl_keys[0])}: {ssl_keys[0]} is set but security.protocol is {protocol}: "
                "set security.protocol=SSL (or SASL_SSL), or remove the ssl.* keys"
            )
        return {}, {}
    _refuse_non_pem_stores(props)
    options: dict[str, str] = {}
    inline: dict[str, str] = {}
    _truststore(props, options, inline)
    has_key = _keystore(props, options, inline)
    key_password = props.raw.get("ssl.key.password")
    if key_password is not None:
        if not has_key:
            raise ClientPropertiesError(
                f"{props.where('ssl.key.password')}: ssl.key.password without a client key: set "
                "ssl.keystore.location (or ssl.keystore.key), or remove it"
            )
        options["ssl.key.password"] = key_password[0]
    algorithm = props.get("ssl.endpoint.identification.algorithm")
    if algorithm is not None:
        if algorithm.lower() not in ("", "https"):
            raise ClientPropertiesError(
                f"{props.where('ssl.endpoint.identification.algorithm')}: ssl.endpoint.identification.algorithm "
                "must be https (verify the broker's host name) or empty (do not)"
            )
        options["ssl.endpoint.identification.algorithm"] = "https" if algorithm else "none"
    return options, inline


def _refuse_non_pem_stores(props: _Props) -> None:
    for store in ("truststore", "keystore"):
        kind = props.get(f"ssl.{store}.type")
        used = [k for k in props.raw if k.startswith(f"ssl.{store}.") and k != f"ssl.{store}.type"]
        if used and (kind or "JKS").upper() != "PEM":
            key = f"ssl.{store}.type"
            at = props.where(key) if key in props else props.where(used[0])
            raise ClientPropertiesError(
                f"{at}: ssl.{store}.type is {(kind or 'JKS (the default)').upper()}: only PEM stores are "
                f"supported: convert the store to PEM and set ssl.{store}.type=PEM"
            )


def _truststore(props: _Props, options: dict[str, str], inline: dict[str, str]) -> None:
    """ssl.ca.location, from a PEM file or inline certificates."""
    location, inline_ca = props.get("ssl.truststore.location"), props.get("ssl.truststore.certificates")
    if location and inline_ca:
        raise ClientPropertiesError(
            f"{props.where('ssl.truststore.certificates')}: give ssl.truststore.location or "
            "ssl.truststore.certificates, not both"
        )
    if location:
        options["ssl.ca.location"] = location
    elif inline_ca:
        inline["ssl.ca.location"] = _pem(inline_ca, "CERTIFICATE", "ssl.truststore.certificates", props.where)


def _keystore(props: _Props, options: dict[str, str], inline: dict[str, str]) -> bool:
    """The client certificate and key, from a PEM file or inline; whether there is a client key."""
    keystore = props.get("ssl.keystore.location")
    chain, key_pem = props.get("ssl.keystore.certificate.chain"), props.get("ssl.keystore.key")
    if keystore and (chain or key_pem):
        raise ClientPropertiesError(
            f"{props.where('ssl.keystore.location')}: give ssl.keystore.location or "
            "ssl.keystore.certificate.chain with ssl.keystore.key, not both"
        )
    if keystore:
        # One PEM file holding the private key and the certificate chain (Kafka's layout):
        # OpenSSL and Python's ssl read each part from it.
        options["ssl.certificate.location"] = keystore
        options["ssl.key.location"] = keystore
    elif chain or key_pem:
        if not (chain and key_pem):
            missing = "ssl.keystore.key" if chain else "ssl.keystore.certificate.chain"
            present = "ssl.keystore.certificate.chain" if chain else "ssl.keystore.key"
            raise ClientPropertiesError(f"{props.where(present)}: {present} needs {missing} too")
        inline["ssl.certificate.location"] = _pem(
            chain, "CERTIFICATE", "ssl.keystore.certificate.chain", props.where
        )
        inline["ssl.key.location"] = _pem(key_pem, "PRIVATE KEY", "ssl.keystore.key", props.where)
    return bool(keystore or chain)


_PEM_BLOCK = re.compile(r"-----BEGIN ([A-Z0-9 ]+)-----(.*?)-----END \1-----", re.S)


def _pem(value: str, label: str, key: str, where: Callable[[str], str]) -> str:
    """Inline PEM as Kafka takes it (often joined onto one line by `\\` continuations, or with
    literal `\\n`) → well-formed PEM for OpenSSL: each block's base64 re-wrapped at 64 columns."""
    text = value.replace("\\n", "\n")
    blocks = []
    for m in _PEM_BLOCK.finditer(text):
        body = re.sub(r"\s+", "", m.group(2))
        lines = [body[i : i + 64] for i in range(0, len(body), 64)]
        blocks.append("\n".join([f"-----BEGIN {m.group(1)}-----", *lines, f"-----END {m.group(1)}-----"]))
    if not blocks or not any(b.startswith("-----BEGIN") and label in b.split("\n", 1)[0] for b in blocks):
        raise ClientPropertiesError(
            f"{where(key)}: {key} is not PEM (-----BEGIN {label}----- … -----END {label}-----)"
        )
    return "\n".join(blocks) + "\n"


def materialise(inline_pem: Mapping[str, str], directory: Path) -> dict[str, str]:
    """Write inline PEM blocks to private files (0600, named by content hash) → option → path."""
    directory.mkdir(parents=True, exist_ok=True)
    os.chmod(directory, 0o700)
    out: dict[str, str] = {}
    for option, text in inline_pem.items():
        digest = hashlib.sha256(text.encode()).hexdigest()[:12]
        path = directory / f"{option.split('.')[1]}-{digest}.pem"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(text)
        out[option] = str(path)
    return out


def load(path: Path) -> ClientProperties:
    """Read and parse a client.properties file (errors name the file, never a value)."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise ClientPropertiesError(f"cannot read {path}: {exc.strerror or exc}") from None
    return parse_client_properties(text, source=str(path))
