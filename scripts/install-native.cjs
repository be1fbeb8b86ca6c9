#!/usr/bin/env node
// npm's install step for the addon. A prebuilt binary in ./prebuilds (made by
// `npm run prebuild`, shipped in the npm tarball) is used when one fits this platform;
// otherwise the addon is compiled from source with cmake-js, and the install says so.
// Without a compiler it stops with one line naming what to install. Nothing is
// downloaded: Node-API headers come from the node-api-headers package (a cmake-js
// dependency), and one Node-API binary serves every Node line.
'use strict';
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const root = path.resolve(__dirname, '..');
const fromSource = process.env.npm_config_build_from_source === 'true';
const target = `${process.platform}-${process.arch}`;

function log(line) {
  console.log(`qentropy: ${line}`);
}

function prebuilt() {
  if (!fs.existsSync(path.join(root, 'prebuilds'))) return undefined;
  try {
    const file = require('node-gyp-build').resolve(root);
    return file.includes(`${path.sep}prebuilds${path.sep}`) ? file : undefined;
  } catch {
    return undefined; // no prebuild for this platform
  }
}

function has(command) {
  return spawnSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' }).status === 0;
}

// A git checkout (this repository's own `npm install`) builds the addon it tests from its
// sources; an installed package prefers its prebuild unless build_from_source is set.
const checkout = fs.existsSync(path.join(root, 'native', 'tests'));
const file = !checkout && !fromSource ? prebuilt() : undefined;
if (file) {
  log(`using the prebuilt addon ${path.relative(root, file)}`);
  process.exit(0);
}

const why = checkout ? 'a source checkout' : fromSource ? 'build_from_source is set' : `no prebuilt addon for ${target}`;
const missing = ['cmake', 'make'].filter((c) => !has(c));
if (!has('c++') && !has('g++')) missing.push('g++');
if (missing.length) {
  console.error(`qentropy: ${why} and no C++ toolchain to build one: install ${missing.join(', ')} (Debian/Ubuntu: apt-get install cmake g++ make)`);
  process.exit(1);
}

log(`${why}: building the addon from source with cmake-js (about a minute)`);
const cmakeJs = require.resolve('cmake-js/bin/cmake-js', { paths: [root] });
// A checkout (CI, contributors) compiles through ccache when it is installed: a fresh clone
// then rebuilds from the cache in seconds. scripts/ is not in the package, so an installed
// package builds plainly.
const launcher = checkout ? require('./lib/ccache.cjs').ccacheCmakeJsArgs(root) : [];
const result = spawnSync(process.execPath, [cmakeJs, 'compile', '--log-level', 'warn', ...launcher], { cwd: root, stdio: 'inherit' });
if (result.status !== 0) {
  console.error(`qentropy: the source build of the addon failed (see above)`);
  process.exit(result.status ?? 1);
}
log('built build/Release/qentropy.node from source');
