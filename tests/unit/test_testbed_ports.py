"""`testbed up` warns about ports in the kernel's ephemeral range (pure: a range file)."""

from __future__ import annotations

from pathlib import Path

from kafka_health.testbed.cli import ephemeral_port_warnings
from kafka_health.testbed.controlplane import control_plane_ports


def range_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "ip_local_port_range"
    path.write_text(text)
    return path


def test_ports_inside_the_range_warn_once_naming_each(tmp_path: Path) -> None:
    (warning,) = ephemeral_port_warnings(37092, range_file(tmp_path, "32768\t60999\n"))
    assert "client 37092, control plane 37182, controller 37192, inter-broker 37292" in warning
    assert "32768-60999" in warning and "below 32468 or above 60999" in warning


def test_only_the_ports_inside_are_named(tmp_path: Path) -> None:
    (warning,) = ephemeral_port_warnings(32600, range_file(tmp_path, "32768 60999"))
    assert "(inter-broker 32800)" in warning
    assert "client 32600" not in warning and "controller 32700" not in warning
    assert "control plane" not in warning


def test_the_control_plane_sits_between_client_and_controller_ports() -> None:
    assert control_plane_ports(29092) == [29182, 29183, 29184]


def test_below_the_range_or_unreadable_is_quiet(tmp_path: Path) -> None:
    assert ephemeral_port_warnings(19092, range_file(tmp_path, "32768 60999")) == []
    assert ephemeral_port_warnings(37092, tmp_path / "absent") == []
    assert ephemeral_port_warnings(37092, range_file(tmp_path, "garbage")) == []


def test_a_port_left_in_time_wait_is_bindable_a_listened_one_is_not() -> None:
    """A server stopped a moment ago leaves its connections in TIME_WAIT on its port: servers bind
    it again (SO_REUSEADDR), so `bindable` says yes; while someone listens, no."""
    import socket

    from kafka_health.testbed.controlplane import bindable

    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    client = socket.create_connection(("127.0.0.1", port))
    accepted, _ = server.accept()
    assert not bindable(port)
    accepted.close()  # the server's side closes first: its end of the connection waits in TIME_WAIT
    server.close()
    client.close()
    assert bindable(port)
