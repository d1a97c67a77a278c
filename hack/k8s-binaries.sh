#!/usr/bin/env bash
# Obtain etcd, kube-apiserver and kubectl for one pinned Kubernetes release and print the
# directory holding them. The LAST LINE of stdout is that directory; every message goes
# to stderr. Sources, in order:
#   1. $KUBEBUILDER_ASSETS, when it holds all three binaries;
#   2. all three on PATH (symlinked into <cache>/k8s/from-path/bin, since they may live in
#      different directories);
#   3. the cache <cache>/k8s/<k8s version>/bin, built from the Go module proxy on first use;
# where <cache> = ${XDG_CACHE_HOME:-~/.cache}/kafka-health.
# A warm run spawns no go command and returns in milliseconds.
#
# The build uses only the Go module proxy (GOPROXY, default proxy.golang.org) and the
# checksum database: no GitHub, no dl.k8s.io.
#   kube-apiserver, kubectl: a scratch module requiring k8s.io/kubernetes@<k8s version>, with
#     every staging module (the ones the release's go.mod replaces with ./staging/src/...)
#     replaced by its published v0.<minor>.<patch> tag. The list is read from that go.mod.
#   etcd: a scratch module requiring go.etcd.io/etcd/server/v3@<etcd version>, whose root
#     package is etcd's main package.
# A cold build took 5.5 minutes on 2 cores (about 0.8 GB into GOMODCACHE, 2.5 GB into
# GOCACHE). Both stay at Go's defaults, so a rebuild reuses them. Note that Go's default
# GOCACHE also follows XDG_CACHE_HOME.
#
# Environment:
#   KAFKA_HEALTH_K8S_VERSION   default v1.35.8 (newest 1.35 patch on the proxy, 2026-11)
#   KAFKA_HEALTH_ETCD_VERSION  default v3.6.16
#   KAFKA_HEALTH_K8S_BUILD=1   ignore KUBEBUILDER_ASSETS and PATH; use or build the cache
#   XDG_CACHE_HOME             cache root (default ~/.cache); binaries go to
#                              $XDG_CACHE_HOME/kafka-health/k8s/<k8s version>/bin
set -euo pipefail

K8S_VERSION="${KAFKA_HEALTH_K8S_VERSION:-v1.35.8}"
ETCD_VERSION="${KAFKA_HEALTH_ETCD_VERSION:-v3.6.16}"
ROOT="${XDG_CACHE_HOME:-$HOME/.cache}/kafka-health/k8s"
BINS=(etcd kube-apiserver kubectl)
STAMP="k8s=$K8S_VERSION etcd=$ETCD_VERSION"

log() { echo "k8s-binaries: $*" >&2; }
die() { echo "k8s-binaries: ERROR: $*" >&2; exit 1; }

has_all() { # dir -> true when it holds all three executables
  local b
  for b in "${BINS[@]}"; do [ -x "$1/$b" ] || return 1; done
}

case "$K8S_VERSION" in v1.*.*) ;; *) die "KAFKA_HEALTH_K8S_VERSION must look like v1.35.8 (got '$K8S_VERSION')";; esac
case "$ETCD_VERSION" in v3.*.*) ;; *) die "KAFKA_HEALTH_ETCD_VERSION must look like v3.6.16 (got '$ETCD_VERSION')";; esac

# 1. KUBEBUILDER_ASSETS
if [ "${KAFKA_HEALTH_K8S_BUILD:-0}" != 1 ] && [ -n "${KUBEBUILDER_ASSETS:-}" ]; then
  if has_all "$KUBEBUILDER_ASSETS"; then
    log "using KUBEBUILDER_ASSETS=$KUBEBUILDER_ASSETS"
    echo "$KUBEBUILDER_ASSETS"
    exit 0
  fi
  log "KUBEBUILDER_ASSETS=$KUBEBUILDER_ASSETS lacks one of ${BINS[*]}; ignoring it"
fi

# 2. PATH
if [ "${KAFKA_HEALTH_K8S_BUILD:-0}" != 1 ]; then
  paths=()
  for b in "${BINS[@]}"; do
    p=$(command -v "$b" 2>/dev/null) || { paths=(); break; }
    paths+=("$p")
  done
  if [ ${#paths[@]} -eq ${#BINS[@]} ]; then
    dir="$ROOT/from-path/bin"
    mkdir -p "$dir"
    for i in "${!BINS[@]}"; do ln -sfn "${paths[$i]}" "$dir/${BINS[$i]}"; done
    log "using ${BINS[*]} from PATH (linked into $dir)"
    echo "$dir"
    exit 0
  fi
fi

# 3. cache (warm path: no subprocess beyond the shell builtins)
DEST="$ROOT/$K8S_VERSION"
if has_all "$DEST/bin" && [ -f "$DEST/stamp" ] && [ "$(<"$DEST/stamp")" = "$STAMP" ]; then
  echo "$DEST/bin"
  exit 0
fi

# ---- cold path: build ----
command -v go >/dev/null 2>&1 || die "go not found on PATH: a Go toolchain >= 1.26 (etcd v3.6.16 declares go 1.26.0) is needed to build etcd and kube-apiserver from the Go module proxy (or set KUBEBUILDER_ASSETS to a dir holding ${BINS[*]})"
mkdir -p "$ROOT"

# One builder at a time; a second caller waits, then finds the finished cache.
if command -v flock >/dev/null 2>&1; then
  exec 9>"$ROOT/.lock"
  if ! flock -n 9; then
    log "another build holds $ROOT/.lock; waiting for it"
    flock 9
  fi
  if has_all "$DEST/bin" && [ -f "$DEST/stamp" ] && [ "$(<"$DEST/stamp")" = "$STAMP" ]; then
    echo "$DEST/bin"
    exit 0
  fi
  # We hold the lock, so any leftover temp dir is from an interrupted build.
  rm -rf "$ROOT"/.tmp.* "$ROOT"/.old.* 2>/dev/null || true
fi

export GOTOOLCHAIN=local GOWORK=off GO111MODULE=on CGO_ENABLED=0
GOOS=$(go env GOHOSTOS) GOARCH=$(go env GOHOSTARCH)
export GOOS GOARCH
GOVER=$(go env GOVERSION)
log "building $STAMP with $GOVER (GOPROXY=$(go env GOPROXY)); a cold build takes about 5 minutes on 2 cores"

TMP=$(mktemp -d "$ROOT/.tmp.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
mkdir -p "$TMP/bin" "$TMP/src/kubernetes" "$TMP/src/etcd"
start=$SECONDS

# go mod download -json <mod@ver>: prints the JSON, or dies naming the module and proxy.
download() {
  local out
  if ! out=$(cd "$TMP" && go mod download -json "$1" 2>&1); then
    log "$out"
    die "cannot download $1 from the Go module proxy (GOPROXY=$(go env GOPROXY)): is the proxy reachable and does that version exist?"
  fi
  if grep -q '"Error"' <<<"$out"; then
    log "$out"
    die "cannot download $1 from the Go module proxy (GOPROXY=$(go env GOPROXY)): is the proxy reachable and does that version exist?"
  fi
  printf '%s\n' "$out"
}
json_field() { # name -> first string value of "name" in the JSON on stdin
  sed -n "s/^[[:space:]]*\"$1\": \"\\(.*\\)\",\\{0,1\\}\$/\\1/p" | head -n1
}

# ---- kube-apiserver + kubectl ----
log "fetching k8s.io/kubernetes@$K8S_VERSION (module zip is large)"
kjson=$(download "k8s.io/kubernetes@$K8S_VERSION")
kgomod=$(json_field GoMod <<<"$kjson")
[ -f "$kgomod" ] || die "go mod download gave no go.mod for k8s.io/kubernetes@$K8S_VERSION"
kcommit=$(json_field Hash <<<"$kjson")
staging_ver="v0.${K8S_VERSION#v1.}"
minor=${K8S_VERSION#v1.}; minor=${minor%%.*}

# Staging modules: replaced with ./staging/src/... AND required by the release (at v0.0.0).
# The sample-* modules are replaced but not required; they are skipped, since some of
# their tags are missing from the proxy and the build never needs them.
mapfile -t replaced < <(sed -n 's#^[[:space:]]*\(k8s\.io/[^[:space:]]*\)[[:space:]]*=>[[:space:]]*\./staging/src/.*#\1#p' "$kgomod")
mapfile -t required < <(sed -n 's#^[[:space:]]*\(k8s\.io/[^[:space:]]*\)[[:space:]]\{1,\}v0\.0\.0\([[:space:]].*\)\{0,1\}$#\1#p' "$kgomod")
[ ${#replaced[@]} -gt 0 ] || die "found no ./staging/src replace directives in $kgomod"
kgo=$(sed -n 's/^go \([0-9.]*\)$/\1/p' "$kgomod")
kgodebug=$(grep -E '^godebug ' "$kgomod" || true)
{
  echo "module kafkahealth.local/k8sbuild"
  echo
  echo "go ${kgo:-1.25.0}"
  [ -z "$kgodebug" ] || { echo; echo "$kgodebug"; }
  echo
  echo "require k8s.io/kubernetes $K8S_VERSION"
  echo
  echo "replace ("
  n=0
  for m in "${replaced[@]}"; do
    for r in "${required[@]}"; do
      if [ "$m" = "$r" ]; then echo "	$m => $m $staging_ver"; n=$((n + 1)); break; fi
    done
  done
  echo ")"
} >"$TMP/src/kubernetes/go.mod"
log "scratch module requires k8s.io/kubernetes $K8S_VERSION with $n staging modules replaced by $staging_ver"

builddate=$(date -u +%Y-%m-%dT%H:%M:%SZ)
kldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  kldflags+=" -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
  kldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=$builddate"
  [ -z "$kcommit" ] || kldflags+=" -X $pkg.gitCommit=$kcommit"
done
log "go build kube-apiserver kubectl"
(cd "$TMP/src/kubernetes" && go build -mod=mod -p 2 -trimpath -ldflags="$kldflags" -o "$TMP/bin/" \
  k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kubectl) \
  || die "building kube-apiserver/kubectl $K8S_VERSION failed (see the go error above; GOPROXY=$(go env GOPROXY))"
log "kube-apiserver and kubectl built after $((SECONDS - start))s"

# ---- etcd ----
log "fetching go.etcd.io/etcd/server/v3@$ETCD_VERSION"
ejson=$(download "go.etcd.io/etcd/server/v3@$ETCD_VERSION")
egomod=$(json_field GoMod <<<"$ejson")
ecommit=$(json_field Hash <<<"$ejson")
ego=$(sed -n 's/^go \([0-9.]*\)$/\1/p' "$egomod" 2>/dev/null || true)
cat >"$TMP/src/etcd/go.mod" <<EOF
module kafkahealth.local/etcdbuild

go ${ego:-1.25.0}

require go.etcd.io/etcd/server/v3 $ETCD_VERSION
EOF
eldflags="-s -w"
[ -z "$ecommit" ] || eldflags+=" -X go.etcd.io/etcd/api/v3/version.GitSHA=${ecommit:0:8}"
log "go build etcd"
(cd "$TMP/src/etcd" && go build -mod=mod -p 2 -trimpath -ldflags="$eldflags" -o "$TMP/bin/etcd" \
  go.etcd.io/etcd/server/v3) \
  || die "building etcd $ETCD_VERSION failed (see the go error above; GOPROXY=$(go env GOPROXY))"

# ---- verify ----
"$TMP/bin/kube-apiserver" --version >&2 || die "built kube-apiserver does not run"
"$TMP/bin/etcd" --version >&2 || die "built etcd does not run"
"$TMP/bin/kubectl" version --client >&2 || die "built kubectl does not run"
log "build took $((SECONDS - start))s; sizes:"
for b in "${BINS[@]}"; do
  printf '  %-15s %6s MiB\n' "$b" "$(( $(stat -c %s "$TMP/bin/$b") / 1048576 ))" >&2
done

# ---- publish atomically ----
printf '%s\n' "$STAMP" >"$TMP/stamp"
printf 'built %s with %s\n' "$builddate" "$GOVER" >"$TMP/build-info"
chmod 755 "$TMP"
if [ -e "$DEST" ]; then   # a stale or different-etcd cache: move it aside, then swap in
  mv -T "$DEST" "$(mktemp -u "$ROOT/.old.XXXXXX")"
fi
mv -T "$TMP" "$DEST"
trap - EXIT
rm -rf "$ROOT"/.old.* 2>/dev/null || true
log "cached in $DEST/bin"
echo "$DEST/bin"
