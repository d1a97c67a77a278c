"""Start the operator: runtime, metrics and probe endpoints, then Kopf's reactor."""

from __future__ import annotations

import asyncio
import logging
import threading
from pathlib import Path

import kopf

from kafka_health.controller import credentials
from kafka_health.controller import runtime as rt_mod
from kafka_health.controller.runtime import OperatorSettings, Runtime
from kafka_health.k8s.client import K8s, load_config
from kafka_health.report import metrics


def run(
    *,
    namespaces: list[str],
    all_namespaces: bool,
    settings: OperatorSettings,
    metrics_port: int,
    health_port: int,
    peering: str,
    standalone: bool,
    priority: int = 0,
    log_format: str,
    verbose: bool,
    kubeconfig: str | None = None,
    stop_flag: threading.Event | None = None,
) -> None:
    """Block running the operator until SIGTERM/SIGINT (or `stop_flag`)."""
    kopf.configure(
        verbose=verbose, log_format=kopf.LogFormat.JSON if log_format == "json" else kopf.LogFormat.FULL
    )
    for noisy in ("kafka", "py4j", "urllib3"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    settings.history_dir.mkdir(parents=True, exist_ok=True)
    credentials.prepare_work_dir(settings.work_dir)  # 0700, ours; material of dead processes removed
    runtime = Runtime(settings=settings, k8s=K8s(load_config(kubeconfig)))
    rt_mod.install(runtime)
    if metrics_port:
        metrics.serve(metrics_port)

    # Import registers the handlers with Kopf's default registry.
    from kafka_health.controller import handlers  # noqa: F401

    async def main() -> None:
        from kafka_health.controller.health import serve

        runner = (
            await serve(health_port, runtime.ready, unresponsive=lambda: runtime.unresponsive)
            if health_port
            else None
        )
        ready = asyncio.Event()

        async def mark_ready() -> None:
            # Ready = watching, and the SparkSession is up (its ~10 s cold start happens here,
            # not inside the first cycle of the first policy).
            try:
                await asyncio.to_thread(runtime.spark)
            except Exception:
                logging.getLogger(__name__).exception("Spark did not start; cycles will retry it")
                return
            await ready.wait()
            runtime.ready.set()
            logging.getLogger(__name__).info("operator ready")

        waiter = asyncio.create_task(mark_ready())
        try:
            await kopf.operator(
                clusterwide=all_namespaces,
                namespaces=namespaces,
                standalone=standalone,
                peering_name=None if standalone else peering,
                # Replicas draw distinct priorities, so one acts and the rest stand by (Kopf
                # freezes all replicas that share the top priority: safe, but nobody serves).
                priority=priority,
                ready_flag=ready,
                stop_flag=stop_flag,
            )
        finally:
            waiter.cancel()
            if runner is not None:
                await runner.cleanup()
            await asyncio.to_thread(runtime.stop)
            credentials.remove_material(settings.work_dir)  # no Secret's material outlives the process

    asyncio.run(main())


def default_work_dir() -> Path:
    import tempfile

    return Path(tempfile.gettempdir()) / "kafka-health-operator"
