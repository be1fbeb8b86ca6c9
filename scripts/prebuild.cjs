#!/usr/bin/env node
// `npm run prebuild`: builds the addon with cmake-js for every target we ship and puts each
// stripped binary where node-gyp-build looks for it, prebuilds/<platform>-<arch>/
// qentropy.napi.glibc.node. Our own script rather than prebuildify: prebuildify 6 has no
// cmake-js backend (it hands its arguments to node-gyp, and we have no binding.gyp).
//
//   node scripts/prebuild.cjs            linux-x64 and linux-arm64
//   node scripts/prebuild.cjs arm64      only the listed architectures
//
// The host's architecture (linux-x64 on our machines; x64 keeps its run-time AVX2/AVX-512
// dispatch) reuses the release build `npm install` made in build/ (cmake-js's default
// tree): cmake-js compile there recompiles only what changed, so nothing is compiled twice.
// linux-arm64 is cross-compiled by Debian's g++-aarch64-linux-gnu in its own tree, through
// ccache when it is installed (a fresh clone's build is then mostly cache hits). Node-API is ABI-stable,
// so one binary per architecture serves every Node line. The version stamp comes from
// package.json (CMakeLists.txt); test/package.test.ts fails on a stale prebuild.
'use strict';
const { spawnSync } = require('node:child_process');
const { ccacheCmakeJsArgs } = require('./lib/ccache.cjs');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const root = path.resolve(__dirname, '..');

// Per target: the cross toolchain (none for the host), its strip, and the Debian package
// that provides both.
const TARGETS = {
  x64: { gnu: 'x86_64-linux-gnu', debian: 'g++-x86-64-linux-gnu' },
  arm64: { gnu: 'aarch64-linux-gnu', debian: 'g++-aarch64-linux-gnu' },
};

function fail(message) {
  console.error(`prebuild: ${message}`);
  process.exit(1);
}

function has(command) {
  return spawnSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' }).status === 0;
}

function run(command, args) {
  const r = spawnSync(command, args, { cwd: root, stdio: 'inherit' });
  if (r.status !== 0) fail(`${command} ${args.join(' ')} failed (${r.error?.message ?? `exit ${r.status}`})`);
}

function build(arch) {
  const target = TARGETS[arch];
  if (!target) fail(`unknown architecture ${arch} (known: ${Object.keys(TARGETS).join(', ')})`);
  const cross = arch !== os.arch();
  const out = cross ? path.join('build', 'prebuild', `linux-${arch}`) : 'build';
  const args = ['compile', '--out', out];
  let strip = 'strip';
  if (cross) {
    if (!has(`${target.gnu}-g++`)) fail(`no ${target.gnu}-g++: install the Debian package ${target.debian}`);
    args.push('--arch', arch, `--CDCMAKE_TOOLCHAIN_FILE=${path.join(root, 'scripts', 'toolchains', `linux-${arch}.cmake`)}`);
    args.push(...ccacheCmakeJsArgs(root));
    strip = `${target.gnu}-strip`;
  }
  console.log(`prebuild: linux-${arch}${cross ? ` (cross, ${target.gnu})` : ''}`);
  run(process.execPath, [require.resolve('cmake-js/bin/cmake-js'), ...args]);

  const dest = path.join(root, 'prebuilds', `linux-${arch}`);
  fs.rmSync(dest, { recursive: true, force: true });
  fs.mkdirSync(dest, { recursive: true });
  const file = path.join(dest, 'qentropy.napi.glibc.node');
  fs.copyFileSync(path.join(root, out, 'Release', 'qentropy.node'), file);
  run(strip, ['--strip-unneeded', file]);
  console.log(`prebuild: ${path.relative(root, file)} (${fs.statSync(file).size} bytes)`);
}

// npm runs a "prebuild" script before every `npm run build` as its pre-hook, with the same
// environment. A developer's build must not cross-compile both targets, so when the npm
// process above us was asked for `build`, this is that hook and does nothing.
function calledAsHookOfBuild() {
  // The npm process is our parent, or our grandparent when a shell stands between.
  let pid = process.ppid;
  for (let depth = 0; depth < 3 && pid > 1; depth++) {
    try {
      // npm sets its process title to "npm run build": one string, hence the split on spaces.
      const argv = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split(/[\0 ]+/);
      const run = argv.findIndex((a) => a === 'run' || a === 'run-script');
      if (run >= 0) return argv[run + 1] === 'build';
      const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
      pid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    } catch {
      return false;
    }
  }
  return false;
}
if (process.env.npm_lifecycle_event === 'prebuild' && calledAsHookOfBuild()) process.exit(0);

if (process.platform !== 'linux') fail('prebuilds are made on Linux (linux-x64 and linux-arm64, glibc)');
const wanted = process.argv.slice(2);
for (const arch of wanted.length ? wanted : Object.keys(TARGETS)) build(arch);
