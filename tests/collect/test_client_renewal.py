"""A librdkafka client whose request timed out is replaced before the next call (admin_calls._renew);
a kafka-python client bootstraps past a server that never answers (kafka_python._bootstrap)."""

from __future__ import annotations

import time
from concurrent.futures import Future

import pytest
from confluent_kafka import KafkaError, KafkaException

from kafka_health.collect.admin_calls import AdminCalls
from kafka_health.collect.kafka_python import KafkaPython
from kafka_health.collect.results import Timeouts
from kafka_health.testbed import faults
from tests.collect.ports import closed_port, silent_listener


def test_a_timed_out_group_read_renews_the_client_for_the_next_call() -> None:
    with closed_port() as port:
        calls = AdminCalls({"bootstrap.servers": f"127.0.0.1:{port}"}, timeouts=Timeouts(2, 2))
        try:
            first = calls.client
            read = calls.group_offsets(["billing"])
            assert read.values == {} and read.errors["billing"].startswith("timed out after"), read.errors
            assert calls.client is not first
        finally:
            calls.close()


def test_librdkafkas_own_request_timeout_also_renews_the_client() -> None:
    # librdkafka's `request_timeout` and our wait share one budget: under load its _TIMED_OUT
    # answer can arrive first (seen in CI), and it is the same timeout.
    port = 1  # nothing listens there: this test hands the client its answers itself
    calls = AdminCalls({"bootstrap.servers": f"127.0.0.1:{port}"}, timeouts=Timeouts(2, 2))
    try:
        first = calls.client
        timed_out: Future[object] = Future()
        timed_out.set_exception(KafkaException(KafkaError(KafkaError._TIMED_OUT, "Local: Timed out")))
        denied: Future[object] = Future()
        denied.set_exception(KafkaException(KafkaError(KafkaError.GROUP_AUTHORIZATION_FAILED)))
        read = calls._gather({"billing": timed_out}, 2)
        assert read.errors["billing"].startswith("timed out after 2.0s (") and calls.client is not first
        second = calls.client
        read = calls._gather({"billing": denied}, 2)
        assert "timed out" not in read.errors["billing"] and calls.client is second
    finally:
        calls.close()


@pytest.mark.kafka
def test_answered_calls_keep_their_client(bootstrap: str, unique_name: str) -> None:
    # In this process, so no group call: librdkafka #5040 can crash an OffsetFetch on a fresh
    # cluster (the operator runs these calls in its client process, `client_host`).
    faults.create_topic(bootstrap, unique_name)
    calls = AdminCalls({"bootstrap.servers": bootstrap}, timeouts=Timeouts(10, 10))
    try:
        first = calls.client
        assert calls.metadata().brokers
        read = calls.list_offsets([(unique_name, 0)])
        assert read.errors == {} and read.values[(unique_name, 0)].log_end_offset == 0, read
        assert calls.client is first
    finally:
        calls.close()


@pytest.mark.kafka
def test_kafka_python_bootstraps_past_a_server_that_never_answers(bootstrap: str) -> None:
    # A listening socket nobody accepts on: the kernel completes the TCP handshake and nothing
    # ever answers, as with a frozen broker. kafka-python alone would wait on it for the whole
    # bootstrap timeout when it picked it; each server now gets its share.
    with silent_listener() as silent:
        servers = [f"127.0.0.1:{silent}", bootstrap.split(",")[0]]
        kp = KafkaPython({"bootstrap_servers": servers}, Timeouts(metadata=6, request=3), str)
        try:
            started = time.monotonic()
            first = kp.client()  # tries the silent server first, for 3 s of the 6
            took = time.monotonic() - started
            assert 2.5 <= took < 6, took
            assert kp.call("describe_cluster", lambda c: c.describe_cluster(), 5)["brokers"]
            kp._replace(first)
            started = time.monotonic()
            kp.client()  # the next client starts at the next server
            assert time.monotonic() - started < 2.5
        finally:
            kp.close()
