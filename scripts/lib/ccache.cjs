// What scripts/lib/ccache.sh does, for the scripts that run cmake-js from Node: with
// Debian's ccache installed, the cmake-js arguments that compile through it, and the
// environment that makes its cache hit across clones at other paths. Empty without ccache.
'use strict';
const { spawnSync } = require('node:child_process');

function ccacheCmakeJsArgs(root) {
  if (spawnSync('sh', ['-c', 'command -v ccache'], { stdio: 'ignore' }).status !== 0) return [];
  process.env.CCACHE_BASEDIR ??= root;
  process.env.CCACHE_NOHASHDIR ??= '1';
  return ['--CDCMAKE_CXX_COMPILER_LAUNCHER=ccache', '--CDCMAKE_C_COMPILER_LAUNCHER=ccache'];
}

module.exports = { ccacheCmakeJsArgs };
