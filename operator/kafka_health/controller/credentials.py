"""`spec.cluster` → a `ConnectionConfig`, reading credentials from Secrets.

Secret values go only into the returned config (whose repr redacts them) and into 0600 files
in a private directory (TLS material: both Kafka clients want file paths). Errors name the
Secret and key, never a value.

The TLS material lives only as long as its policy. This process writes it under
`<work dir>/tls-material-<pid>/<namespace>/<policy>/` (directories 0700, files 0600, all owned by
the operator's user), one file per Secret value, named by its hash: a changed Secret gets a new
file and the cycle that wrote it removes the policy's other files (an old CA or key never
lingers); a policy that takes no material from Secrets any more has no directory. When a
policy's daemon stops (the policy is deleted, this replica stands by, the operator shuts down)
its directory is removed (`forget_policy`); at shutdown the process's whole directory is
(`remove_material`); at start-up, directories of operator processes that are gone (killed
before they could clean up) are (`prepare_work_dir`).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import stat
from collections.abc import Callable
from pathlib import Path

from kafka_health.collect.connection import ConnectionConfig
from kafka_health.models.policy import ClusterSpec, SecretKeyRef, SecurityProtocol
from kafka_health.models.reasons import ProblemReason

ReadSecret = Callable[[str, str, str], str]
"""(namespace, name, key) → value; raises K8sError (status 404) when missing."""


class CredentialsError(RuntimeError):
    """A referenced Secret or key is missing or unreadable; `reason` is the condition reason."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


def _read(read_secret: ReadSecret, namespace: str, ref: SecretKeyRef, field: str) -> str:
    try:
        return read_secret(namespace, ref.name, ref.key)
    except Exception as exc:
        status = getattr(exc, "status", None)
        reason = ProblemReason.SECRET_NOT_FOUND if status == 404 else ProblemReason.SECRET_UNREADABLE
        raise CredentialsError(
            reason,
            f"{field}: cannot read key {ref.key!r} of Secret {namespace}/{ref.name} ({status or exc.__class__.__name__})",
        ) from None


MATERIAL_PREFIX = "tls-material-"


def material_root(work_dir: Path, pid: int | None = None) -> Path:
    """The directory of this process's (or `pid`'s) TLS material under the operator's work dir."""
    return work_dir / f"{MATERIAL_PREFIX}{os.getpid() if pid is None else pid}"


def policy_material_dir(work_dir: Path, namespace: str, name: str) -> Path:
    """Where one policy's TLS material is written (`connection_for`'s `workdir`)."""
    return material_root(work_dir) / namespace / name


def _private_dir(path: Path) -> None:
    """`path` and its parents up to the work dir exist, are directories of this user (not links),
    and are 0700: no other user can read, replace or remove the material in them."""
    # The process's, the namespace's and the policy's directory (mkdir's parents take no mode).
    for d in (*reversed(path.parents[:2]), path):
        d.mkdir(parents=True, exist_ok=True, mode=0o700)
        st = os.lstat(d)
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid():
            raise PermissionError(f"{d} is not a directory of the operator's user (uid {os.geteuid()})")
        if stat.S_IMODE(st.st_mode) != 0o700:
            os.chmod(d, 0o700)


def _write_private(workdir: Path, name: str, content: str) -> str:
    _private_dir(workdir)
    path = workdir / name
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w") as fh:
        os.fchmod(fh.fileno(), 0o600)  # a file left by an earlier writer keeps its mode otherwise
        fh.write(content)
    return str(path)


def _keep_only(workdir: Path, keep: set[str]) -> None:
    """Remove the policy's files other than `keep` (an old Secret value's, a field no longer set);
    no directory at all when nothing is kept."""
    if not workdir.is_dir():
        return
    for entry in workdir.iterdir():
        if entry.name not in keep:
            _remove(entry)
    if not keep:
        _remove(workdir)
        _remove_if_empty(workdir.parent)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def _remove_if_empty(path: Path) -> None:
    with contextlib.suppress(OSError):  # not empty (another policy of the namespace), or gone
        path.rmdir()


def forget_policy(work_dir: Path, namespace: str, name: str) -> None:
    """Remove a policy's TLS material (its daemon stopped: deleted, standing by, shutting down)."""
    workdir = policy_material_dir(work_dir, namespace, name)
    _keep_only(workdir, set())


def remove_material(work_dir: Path) -> None:
    """Remove all TLS material this process wrote (at shutdown)."""
    _remove(material_root(work_dir))


def prepare_work_dir(work_dir: Path) -> None:
    """At start-up: the work dir is a 0700 directory of the operator's user, and the TLS material
    of operator processes that are gone (and any left under this process's id) is removed."""
    work_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    st = os.lstat(work_dir)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid():
        raise PermissionError(
            f"the work dir {work_dir} is not a directory of the operator's user (uid {os.geteuid()}): "
            "set KAFKA_HEALTH_WORK_DIR to a directory of its own"
        )
    if stat.S_IMODE(st.st_mode) != 0o700:
        os.chmod(work_dir, 0o700)
    for entry in work_dir.glob(f"{MATERIAL_PREFIX}*"):
        pid = entry.name.removeprefix(MATERIAL_PREFIX)
        if pid.isdigit() and (int(pid) == os.getpid() or not _alive(int(pid))):
            _remove(entry)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process: not ours to judge
    return True


def connection_for(
    cluster: ClusterSpec, namespace: str, read_secret: ReadSecret, workdir: Path
) -> ConnectionConfig:
    """The connection settings of a policy's cluster (raises CredentialsError for a bad reference).
    `workdir` (`policy_material_dir`) holds the policy's TLS material and nothing else: the files
    of Secret values read now are written, any other file there is removed."""
    security = cluster.security
    conf: dict[str, str] = {
        "bootstrap.servers": ",".join(str(s) for s in cluster.bootstrap_servers),
        "security.protocol": security.protocol.value,
    }
    if security.sasl is not None:
        sasl = security.sasl
        conf["sasl.mechanism"] = sasl.mechanism.value
        conf["sasl.username"] = _read(
            read_secret, namespace, sasl.username, "spec.cluster.security.sasl.username"
        )
        conf["sasl.password"] = _read(
            read_secret, namespace, sasl.password, "spec.cluster.security.sasl.password"
        )
    written: set[str] = set()
    if security.tls is not None and security.protocol in (SecurityProtocol.SSL, SecurityProtocol.SASL_SSL):
        tls = security.tls
        # One directory per policy; file names carry a hash so a rotated Secret gets new files.
        for field, ref, option in (
            ("ca", tls.ca, "ssl.ca.location"),
            ("certificate", tls.certificate, "ssl.certificate.location"),
            ("key", tls.key, "ssl.key.location"),
        ):
            if ref is None:
                continue
            value = _read(read_secret, namespace, ref, f"spec.cluster.security.tls.{field}")
            digest = hashlib.sha256(value.encode()).hexdigest()[:12]
            written.add(f"{field}-{digest}.pem")
            conf[option] = _write_private(workdir, f"{field}-{digest}.pem", value)
        # librdkafka verifies the broker's host name by default; verifyHostname=false turns it off.
        conf["ssl.endpoint.identification.algorithm"] = "https" if tls.verify_hostname else "none"
    _keep_only(workdir, written)
    return ConnectionConfig.from_dict(conf)
