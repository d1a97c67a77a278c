#!/usr/bin/env bash
# Prepare a machine for the project: check prerequisites, build (or reuse) the cached
# Python venv, and link it as ./.venv. Idempotent; a warm run takes about a second.
set -euo pipefail
cd "$(dirname "$0")/.."

CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/kafka-health"
PY="${PYTHON:-python3.11}"
command -v "$PY" >/dev/null 2>&1 || PY=python3

missing=()
if ! "$PY" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' 2>/dev/null; then
  missing+=("Python >= 3.11 (set PYTHON=/path/to/python3.11; Debian: apt-get install python3.11 python3.11-venv)")
fi
if command -v java >/dev/null 2>&1; then
  jv=$(java -XshowSettings:properties -version 2>&1 | awk -F'= ' '/java.specification.version/ {print $2}')
  if [ "${jv%%.*}" -lt 17 ] 2>/dev/null; then
    missing+=("Java 17 or 21 (found $jv; Debian: apt-get install openjdk-17-jdk-headless)")
  fi
else
  missing+=("Java 17 or 21 (Debian: apt-get install openjdk-17-jdk-headless)")
fi
command -v mvn >/dev/null 2>&1 || missing+=("Maven, to fetch the Kafka jars from Maven Central (Debian: apt-get install maven)")
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: missing prerequisites:" >&2
  printf '  - %s\n' "${missing[@]}" >&2
  exit 1
fi

# The venv is keyed by the interpreter version and the dependency list, so a change
# to pyproject.toml builds a fresh one and an unchanged tree reuses the cached one.
key=$( { "$PY" -c 'import sys; print(sys.version)'; sed -n '/^\[project\]/,/^\[tool/p' pyproject.toml; } | sha256sum | cut -c1-12)
VENV="$CACHE/venv/$key"
if [ ! -f "$VENV/.complete" ]; then
  echo "setup: building Python venv $VENV (first run takes a few minutes)" >&2
  rm -rf "$VENV" && mkdir -p "$CACHE/venv"
  "$PY" -m venv "$VENV"
  "$VENV/bin/pip" install -q --upgrade pip setuptools
  "$VENV/bin/pip" install -q -e ".[dev]"
  touch "$VENV/.complete"
fi
# The editable install points at one checkout; relink it when this is another one
# (a fresh clone in CI reuses the cached venv but must import its own code).
here=$(pwd -P)
linked=$("$VENV/bin/python" -c 'import kafka_health, pathlib; print(pathlib.Path(kafka_health.__file__).resolve().parents[2])' 2>/dev/null || true)
if [ "$linked" != "$here" ]; then
  "$VENV/bin/pip" install -q --no-deps --no-build-isolation -e . >/dev/null
fi
ln -sfn "$VENV" .venv
# The driver's own classes (kafka_health_spark/plan_jar.py): the slot source a policy's reused
# plans read. Compiled once (~5 s) with javac; without a JDK plans are built every cycle (exit 2),
# but a JDK that fails to build them (exit 1: a warning or error above) fails setup.
jar_rc=0
"$VENV/bin/python" -m kafka_health_spark.plan_jar >/dev/null || jar_rc=$?
if [ "$jar_rc" -eq 2 ]; then
  echo "setup: no JDK, no Spark plan jar (the operator builds its plans every cycle)" >&2
elif [ "$jar_rc" -ne 0 ]; then
  echo "setup: FAILED: a JDK is here but the Spark plan jar did not build (javac output above;" \
    "spark/kafka_health_spark/plan_jar.py, docs/spark-internals.md)" >&2
  exit 1
fi
# The driver JVM's class archive for this JDK and Spark (kafka_health_spark/class_archive.py):
# built once (~1 min), it halves a cold Spark start. Without it everything works, only slower.
"$VENV/bin/python" -m kafka_health.diagnose.class_archive \
  || echo "setup: no Spark class archive (Spark starts slower; see the line above)" >&2
echo "setup: ok ($VENV)" >&2
