#!/usr/bin/env node
// npm's install step for the addon: use a prebuilt binary from ./prebuilds (made by
// `npm run prebuild`) when one fits this platform, otherwise build from source with
// cmake-js. Nothing is downloaded: Node-API headers come from the node-api-headers
// package that cmake-js depends on (package.json "binary.napi_versions").
'use strict';
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const root = path.resolve(__dirname, '..');
const fromSource = process.env.npm_config_build_from_source === 'true';

if (!fromSource && fs.existsSync(path.join(root, 'prebuilds'))) {
  try {
    const file = require('node-gyp-build').resolve(root);
    if (file.includes(`${path.sep}prebuilds${path.sep}`)) {
      console.log(`qentropy: using prebuilt addon ${path.relative(root, file)}`);
      process.exit(0);
    }
  } catch {
    // no matching prebuild: fall through to the source build
  }
}

const result = spawnSync('npm', ['run', 'build:native'], { cwd: root, stdio: 'inherit' });
process.exit(result.status ?? 1);
