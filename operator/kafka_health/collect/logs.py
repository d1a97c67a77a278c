"""Client logs into Python logging, with secret values scrubbed.

librdkafka logs through the `logger` option into `kafka_health.collect.librdkafka`; kafka-python
logs into its own `kafka.*` loggers, and `kafka.admin.client` prints its whole configuration
(SASL password included) at DEBUG. Both get a filter that replaces every registered secret;
librdkafka's repeated connection failures are also thinned out, and its hints naming its own
settings dropped (`security_errors.kafka_key_names`).
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable, Iterable

from kafka_health.collect import security_errors
from kafka_health.collect.connection import redact

LIBRDKAFKA_LOGGER = "kafka_health.collect.librdkafka"
# kafka-python loggers known to log client configuration.
_KAFKA_PYTHON_CONFIG_LOGGERS = ("kafka.admin.client",)


class SecretFilter(logging.Filter):
    """Rewrites records so no registered secret value reaches a handler."""

    def __init__(self) -> None:
        super().__init__()
        self._lock = threading.Lock()
        self._secrets: dict[str, int] = {}  # value → number of clients using it

    def add(self, secrets: Iterable[str]) -> None:
        with self._lock:
            for s in secrets:
                self._secrets[s] = self._secrets.get(s, 0) + 1

    def remove(self, secrets: Iterable[str]) -> None:
        with self._lock:
            for s in secrets:
                left = self._secrets.get(s, 0) - 1
                if left > 0:
                    self._secrets[s] = left
                else:
                    self._secrets.pop(s, None)

    def filter(self, record: logging.LogRecord) -> bool:
        with self._lock:
            secrets = list(self._secrets)
        if secrets:
            message = record.getMessage()
            scrubbed = redact(message, secrets)
            if scrubbed != message:
                record.msg, record.args = scrubbed, None
        return True


# What differs between repeats of one librdkafka failure: the client instance
# ("rdkafka#producer-98") and the timing suffix ("(after 3ms in state CONNECT, 2 identical
# error(s) suppressed)").
_INSTANCE = re.compile(r"rdkafka#[a-z]+-\d+")
_TIMING = re.compile(r"\s*\(after \d+ms in state [A-Z_]+(?:, \d+ identical error\(s\) suppressed)?\)")


def repeat_key(message: str) -> str:
    """The part of a librdkafka message that says what failed, not when or in which client."""
    return _TIMING.sub("", _INSTANCE.sub("rdkafka", message))


class RepeatFilter(logging.Filter):
    """Drops a message seen less than `window` seconds ago: librdkafka retries a dead bootstrap
    server every few milliseconds and logs each failure (once per client, with its timing)."""

    def __init__(self, window: float = 30.0, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self.window, self._clock = window, clock
        self._lock = threading.Lock()
        self._seen: dict[str, float] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        key, now = repeat_key(record.getMessage()), self._clock()
        with self._lock:
            last = self._seen.get(key)
            if last is not None and now - last < self.window:
                return False
            if len(self._seen) > 1000:
                self._seen = {k: t for k, t in self._seen.items() if now - t < self.window}
            self._seen[key] = now
        return True


class KafkaKeyNamesFilter(logging.Filter):
    """librdkafka's lines without its hints naming its own settings (`ssl.ca.location`, …): the
    user wrote Kafka's client.properties keys, so those are the names a log line carries."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        renamed = security_errors.kafka_key_names(message)
        if renamed != message:
            record.msg, record.args = renamed, None
        return True


SECRETS = SecretFilter()
_installed = False
_install_lock = threading.Lock()


def install() -> logging.Logger:
    """Attach the secret filter (once per process) and return the librdkafka logger."""
    global _installed
    librdkafka = logging.getLogger(LIBRDKAFKA_LOGGER)
    with _install_lock:
        if not _installed:
            for name in (LIBRDKAFKA_LOGGER, *_KAFKA_PYTHON_CONFIG_LOGGERS):
                logging.getLogger(name).addFilter(SECRETS)
            librdkafka.addFilter(RepeatFilter())
            librdkafka.addFilter(KafkaKeyNamesFilter())
            _installed = True
    return librdkafka
