"""The options every subcommand that talks to Kafka shares: `--command-config FILE` and
`--bootstrap-servers`.

`--command-config` is Kafka's own client.properties (as Kafka's tools take it), read by
`collect.client_properties`; its default is `$KAFKA_HEALTH_COMMAND_CONFIG` (which
`kafka-health testbed env` exports). Errors in the file are usage errors (exit 2) that name
the key and the fix, never a value.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
from pathlib import Path
from typing import Annotated

import typer

from kafka_health.collect import client_properties
from kafka_health.collect.connection import ConnectionConfig, ConnectionConfigError

CommandConfig = Annotated[
    Path | None,
    typer.Option(
        "--command-config",
        envvar=client_properties.ENV_VAR,
        dir_okay=False,
        help="Kafka client settings (client.properties, as Kafka's tools take them): security.protocol, "
        "sasl.mechanism, sasl.jaas.config, ssl.truststore.* / ssl.keystore.* (PEM). "
        f"Default: ${client_properties.ENV_VAR}.",
    ),
]

# --bootstrap-servers of the commands that act on a cluster (elect-leaders, reset-offsets, restart).
Bootstrap = Annotated[
    str,
    typer.Option(
        "--bootstrap-servers",
        "-b",
        envvar="KAFKA_BOOTSTRAP_SERVERS",
        help="HOST:PORT[,HOST:PORT...] of the cluster.",
    ),
]


def connection(bootstrap_servers: str | None, command_config: Path | None) -> ConnectionConfig:
    """The connection settings of a command (raises click's usage error for a bad file)."""
    try:
        if command_config is None:
            return ConnectionConfig.from_dict({"bootstrap.servers": bootstrap_servers or ""})
        props = client_properties.load(command_config)
        pem_dir = None
        if props.inline_pem:
            pem_dir = Path(tempfile.mkdtemp(prefix="kafka-health-pem-"))
            atexit.register(shutil.rmtree, pem_dir, True)
        return props.connection(bootstrap_servers, pem_dir)
    except ConnectionConfigError as exc:
        raise typer.BadParameter(str(exc), param_hint="--command-config") from None
