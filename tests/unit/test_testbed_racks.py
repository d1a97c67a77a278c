"""`testbed up --racks R`: broker i gets broker.rack=rack-<i mod R>, dedicated controllers none;
recorded per broker in testbed.json, so a restarted broker (its config written again from the
state) keeps its rack; an existing testbed with other racks is refused, like another size."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import pytest

from kafka_health.testbed import broker_config, security
from kafka_health.testbed.cluster import Testbed
from kafka_health.testbed.state import TestbedError, TestbedState


def state(brokers: int, controllers: int, racks: int) -> TestbedState:
    nodes, voters = broker_config.new_layout(brokers, controllers, 47092, False, racks)
    return TestbedState(brokers=nodes, controllers=voters, cluster_id="x", kafka_version="4.4.0", racks=racks)


def test_brokers_are_spread_over_the_racks_controllers_get_none() -> None:
    tb = state(5, 3, 3)
    assert [b.rack for b in tb.brokers] == ["rack-0", "rack-1", "rack-2", "rack-0", "rack-1"]
    assert [b.rack for b in tb.controllers] == [None, None, None]
    assert [b.rack for b in state(3, 0, 0).brokers] == [None, None, None]


def test_server_properties_name_the_rack(tmp_path: Path) -> None:
    tb = state(3, 1, 2)
    material = security.Material(tmp_path, "plaintext")
    props = {b.id: broker_config.node_properties(tb, b, tmp_path, material) for b in tb.nodes}
    assert [props[b.id].get("broker.rack") for b in tb.brokers] == ["rack-0", "rack-1", "rack-0"]
    assert "broker.rack" not in props[broker_config.CONTROLLER_ID_BASE]
    plain = state(3, 0, 0)
    assert all(
        "broker.rack" not in broker_config.node_properties(plain, b, tmp_path, material) for b in plain.nodes
    )
    broker_config.write_configs(tb, tmp_path, material)
    assert "broker.rack=rack-1\n" in broker_config.config_path(tmp_path, 1).read_text()


def test_the_rack_is_recorded_and_read_back(tmp_path: Path) -> None:
    tb = Testbed(tmp_path)
    tb._save(state(3, 0, 3))
    loaded = tb.require()
    assert [b.rack for b in loaded.brokers] == ["rack-0", "rack-1", "rack-2"] and loaded.racks == 3
    # a testbed recorded before --racks existed reads as rackless
    old = asdict(state(3, 0, 0))
    for b in old["brokers"]:
        del b["rack"]
    del old["racks"]
    tb.state_file.write_text(json.dumps(old))
    legacy = tb.require()
    assert legacy.racks == 0 and [b.rack for b in legacy.brokers] == [None, None, None]


def test_other_racks_on_an_existing_testbed_are_refused(tmp_path: Path) -> None:
    tb = state(3, 0, 3)
    broker_config.check_same_shape(tb, tmp_path, 3, None, None, 3)
    broker_config.check_same_shape(tb, tmp_path, None, None, None, None)
    with pytest.raises(TestbedError, match="has --racks 3"):
        broker_config.check_same_shape(tb, tmp_path, 3, None, None, 2)
    with pytest.raises(TestbedError, match="--racks must be 0"):
        broker_config.new_layout(3, 0, 47092, False, -1)


def test_broker_config_items_reach_every_node_and_bad_ones_name_the_option(tmp_path: Path) -> None:
    """`testbed up --broker-config KEY=VALUE`: kept in the state's extra properties, written into
    every node's config (overriding the testbed's own); a malformed item names the flag and the form."""
    import typer

    from kafka_health.testbed.cli import _broker_config

    assert _broker_config(["replica.fetch.backoff.ms=100", " num.io.threads = 4 "]) == {
        "replica.fetch.backoff.ms": "100",
        "num.io.threads": "4",
    }
    assert _broker_config(None) == {}
    for bad in ("replica.fetch.backoff.ms", "=100"):
        with pytest.raises(typer.BadParameter, match="KEY=VALUE"):
            _broker_config([bad])
    tb = state(3, 1, 0)
    tb.extra = _broker_config(["replica.fetch.backoff.ms=100", "num.io.threads=4"])
    material = security.Material(tmp_path, "plaintext")
    for b in tb.nodes:
        props = broker_config.node_properties(tb, b, tmp_path, material)
        assert props["replica.fetch.backoff.ms"] == "100" and props["num.io.threads"] == "4"
