#!/usr/bin/env bash
# Builds the test bed's servers from Go modules at pinned versions into a cache outside the clone.
# Usage: build-go.sh <cache-dir> <component>
#   component: kubernetes | etcd | etcd-images | nats | versitygw | helm | keda | keda-crds
# Idempotent: a component whose stamp matches its pin is not rebuilt.
set -euo pipefail

cache=$1
component=$2
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=pins.sh
. "$here/pins.sh"

export CGO_ENABLED=0 GOFLAGS=-buildvcs=false GOTOOLCHAIN=local
bin="$cache/bin"
mkdir -p "$bin"

stamp_ok() { [ -f "$bin/.$1.stamp" ] && [ "$(cat "$bin/.$1.stamp")" = "$2" ]; }
stamp() { echo "$2" > "$bin/.$1.stamp"; }
log() { echo "[build] $*" >&2; }

build_kubernetes() {
  local v=$KUBERNETES_VERSION
  stamp_ok kubernetes "$v" && return 0
  local dir="$cache/src/kubernetes-$v"
  mkdir -p "$dir"
  cd "$dir"
  log "kubernetes $v: resolving modules"
  go mod download -json "k8s.io/kubernetes@$v" > dl.json
  local gomod
  gomod=$(sed -n 's/.*"GoMod": "\(.*\)".*/\1/p' dl.json)
  local goversion
  goversion=$(sed -n 's/^go \(.*\)$/\1/p' "$gomod")
  {
    echo "module tideway.dev/testbed/kubernetes"
    echo
    echo "go $goversion"
    echo
    echo "require k8s.io/kubernetes $v"
    echo
    echo "replace ("
    # staging modules are published as k8s.io/<name> v0.<minor>.<patch>
    sed -n 's#^[[:space:]]*\(k8s.io/[a-z0-9-]*\) => ./staging/.*#\1#p' "$gomod" | while read -r m; do
      echo "	$m => $m v0.${v#v1.}"
    done
    echo ")"
  } > go.mod
  cat > tools.go <<'GO'
//go:build tools

package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubectl/pkg/cmd"
)
GO
  log "kubernetes $v: go mod tidy (downloads modules)"
  go mod tidy -e >/dev/null 2>tidy.log || { cat tidy.log >&2; return 1; }
  local ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$v -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$(echo "$v" | cut -d. -f2) -X k8s.io/client-go/pkg/version.gitVersion=$v"
  for cmd in kube-apiserver kube-controller-manager kube-scheduler kube-proxy kubectl; do
    log "kubernetes $v: building $cmd"
    go build -trimpath -tags notest -ldflags "$ldflags" -o "$bin/$cmd" "k8s.io/kubernetes/cmd/$cmd"
  done
  stamp kubernetes "$v"
}

build_module() { # name version module package output
  # A wrapper module instead of `go install pkg@v`: some modules (etcd) carry replace directives.
  local name=$1 v=$2 mod=$3 pkg=$4 out=$5
  stamp_ok "$name" "$v" && return 0
  local dir="$cache/src/$name-$v"
  mkdir -p "$dir"
  cd "$dir"
  log "$name $v: resolving modules"
  [ -f go.mod ] || go mod init "tideway.dev/testbed/$name" >/dev/null 2>&1
  printf '//go:build tools\n\npackage tools\n\nimport _ "%s"\n' "$pkg" > tools.go
  go get "$mod@$v" >/dev/null 2>get.log || { cat get.log >&2; return 1; }
  go mod tidy >/dev/null 2>tidy.log || { cat tidy.log >&2; return 1; }
  log "$name $v: building"
  go build -trimpath -ldflags "-s -w" -o "$bin/$out" "$pkg"
  stamp "$name" "$v"
}

# The official etcd image's programs at one version, for the test bed's copy of that image
# (gcr.io/etcd-development/etcd:<v>, image-table/etcd.ts): etcd, etcdctl and etcdutl from one
# wrapper module, so the three share one set of dependencies as in a release. Apart from bin/etcd
# (the control plane's) so that neither build's stamp depends on the other.
build_etcd_image() { # version
  local v=$1 name="etcd-image-$1"
  stamp_ok "$name" "$v" && return 0
  local out="$cache/images/etcd-$v" dir="$cache/src/$name"
  local -A mods=([etcd]=go.etcd.io/etcd/server/v3 [etcdctl]=go.etcd.io/etcd/etcdctl/v3 [etcdutl]=go.etcd.io/etcd/etcdutl/v3)
  mkdir -p "$dir" "$out"
  cd "$dir"
  log "etcd image $v: resolving modules"
  [ -f go.mod ] || go mod init "tideway.dev/testbed/$name" >/dev/null 2>&1
  {
    printf '//go:build tools\n\npackage tools\n\nimport (\n'
    for m in "${mods[@]}"; do printf '\t_ "%s"\n' "$m"; done
    printf ')\n'
  } > tools.go
  go get "${mods[@]/%/@$v}" >/dev/null 2>get.log || { cat get.log >&2; return 1; }
  go mod tidy >/dev/null 2>tidy.log || { cat tidy.log >&2; return 1; }
  local program
  for program in etcd etcdctl etcdutl; do
    log "etcd image $v: building $program"
    go build -trimpath -ldflags "-s -w" -o "$out/$program" "${mods[$program]}"
  done
  stamp "$name" "$v"
}

module_source() { # name module version → prints a writable copy of the module's own source
  # Built as the project builds itself: its go.mod, go.sum and replace directives, no wrapper.
  local name=$1 mod=$2 v=$3
  local dir="$cache/src/$name-$v"
  if [ ! -f "$dir/.complete" ]; then
    log "$name $v: downloading the module"
    local src
    src=$(go mod download -json "$mod@$v" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
    [ -n "$src" ] || { echo "go mod download $mod@$v gave no directory" >&2; return 1; }
    rm -rf "$dir"
    mkdir -p "$(dirname "$dir")"
    cp -r "$src" "$dir"
    chmod -R u+w "$dir"
    touch "$dir/.complete"
  fi
  echo "$dir"
}

fetch_deps() { # package: downloads the modules it needs, quietly (go build names each one)
  go list -deps "$1" >/dev/null 2>deps.log || { cat deps.log >&2; return 1; }
}

build_helm() {
  local v=$HELM_VERSION
  stamp_ok helm "$v" && return 0
  local dir
  dir=$(module_source helm helm.sh/helm/v3 "$v")
  cd "$dir"
  # As helm's Makefile: its version, and the Kubernetes version lint and template assume (that of
  # the client-go it is built with).
  local minor
  minor=$(sed -n 's#^[[:space:]]*k8s.io/client-go v0\.\([0-9]*\)\..*#\1#p' go.mod)
  [ -n "$minor" ] || { echo "helm $v: no k8s.io/client-go in its go.mod" >&2; return 1; }
  local ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=$v -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
  for p in helm.sh/helm/v3/pkg/lint/rules helm.sh/helm/v3/pkg/chartutil; do
    ldflags="$ldflags -X $p.k8sVersionMajor=1 -X $p.k8sVersionMinor=$minor"
  done
  log "helm $v: fetching its modules"
  fetch_deps ./cmd/helm
  log "helm $v: building"
  go build -trimpath -ldflags "$ldflags" -o "$bin/helm" ./cmd/helm
  stamp helm "$v"
}

# KEDA's CRDs (ScaledObject, …), from its module: what a chart's ScaledObjects are checked against.
keda_crds() {
  local v=$KEDA_VERSION
  local out="$cache/share/keda-$v/crds"
  [ -f "$out/.complete" ] && return 0
  local dir
  dir=$(module_source keda github.com/kedacore/keda/v2 "$v")
  rm -rf "$out"
  mkdir -p "$out"
  cp "$dir"/config/crd/bases/*.yaml "$out"/
  touch "$out/.complete"
}

# The KEDA operator (cmd/operator): activation, i.e. scaling between 0 and 1, is its own; beyond
# one replica it drives an HPA, which reads its metrics through keda-adapter (not built).
build_keda() {
  local v=$KEDA_VERSION
  keda_crds
  stamp_ok keda "$v" && return 0
  local dir
  dir=$(module_source keda github.com/kedacore/keda/v2 "$v")
  cd "$dir"
  log "keda $v: fetching its modules"
  fetch_deps ./cmd/operator
  log "keda $v: building the operator (slow)"
  go build -trimpath -ldflags "-s -w -X=github.com/kedacore/keda/v2/version.Version=${v#v}" \
    -o "$bin/keda" ./cmd/operator
  stamp keda "$v"
}

case $component in
  kubernetes) build_kubernetes ;;
  etcd) build_module etcd "$ETCD_VERSION" go.etcd.io/etcd/server/v3 go.etcd.io/etcd/server/v3 etcd ;;
  etcd-images) build_etcd_image "$ETCD_VERSION" && build_etcd_image "$ETCD35_VERSION" ;;
  nats) build_module nats "$NATS_VERSION" github.com/nats-io/nats-server/v2 github.com/nats-io/nats-server/v2 nats-server ;;
  versitygw) build_module versitygw "$VERSITYGW_VERSION" github.com/versity/versitygw github.com/versity/versitygw/cmd/versitygw versitygw ;;
  helm) build_helm ;;
  keda) build_keda ;;
  keda-crds) keda_crds ;;
  *) echo "unknown component $component" >&2; exit 2 ;;
esac
