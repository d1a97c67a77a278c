"""What the testbed records of its cluster (`<state dir>/testbed.json`): the nodes, their ports and
pids, the cluster id, the Kafka version and how the client listener is secured."""

from __future__ import annotations

from dataclasses import dataclass, field


class TestbedError(RuntimeError):
    """The testbed could not do what was asked; the message names the broker and the log to read."""

    __test__ = False


@dataclass
class BrokerState:
    id: int
    port: int
    controller_port: int
    pid: int | None = None
    internal_port: int | None = None  # the PLAINTEXT inter-broker listener of a secured testbed
    role: str = "broker,controller"  # process.roles: combined, "broker" or "controller"
    rack: str | None = None  # broker.rack (`testbed up --racks`); recorded, so a restart keeps it


@dataclass
class TestbedState:
    __test__ = False
    brokers: list[BrokerState]
    cluster_id: str
    kafka_version: str
    auto_leader_rebalance: bool = False
    extra: dict[str, str] = field(default_factory=dict)
    security: str = "plaintext"  # one of security.MODES: how the client listener is secured
    controllers: list[BrokerState] = field(default_factory=list)  # dedicated controller-only nodes
    certificate_days: float = 825.0  # validity of the broker certificates a TLS testbed issues
    racks: int = 0  # `testbed up --racks`: broker i has broker.rack rack-<i mod racks>; 0: none

    @property
    def nodes(self) -> list[BrokerState]:
        """Every process: brokers (or combined nodes), then dedicated controllers."""
        return [*self.brokers, *self.controllers]

    @property
    def voters(self) -> list[BrokerState]:
        """The KRaft voters: the dedicated controllers, else the combined nodes."""
        return self.controllers or self.brokers

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(f"127.0.0.1:{b.port}" for b in self.brokers)
