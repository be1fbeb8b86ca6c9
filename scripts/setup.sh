#!/usr/bin/env bash
# Installs what qentropy needs to build and to run its whole test suite, then installs
# the npm dependencies and builds the native addon and the TypeScript (npm install).
#
# System packages (Debian/Ubuntu names):
#   cmake g++ make python3     build the addon and better-sqlite3 from source
#   softhsm2 opensc            PKCS#11 modules the HSM sink is tested against
#   curl openssl               an independent HTTPS/mTLS client for the KME tests
#   jq                         reads JSON answers in docs/kme.md's three-site walk-through (run by a test)
#   systemd                    systemd-analyze, to verify the shipped unit files
#   util-linux libcap2-bin     setpriv/capsh, to test the kernel sink without privileges
#   rng-tools5                 rngd, the baseline of the feeder benchmark
#   chromium                   the real browser the quality page's tests drive (playwright-core)
#   libbz2-dev                 bzip2, the SP 800-90B permutation test's compression statistic
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(cmake g++ make python3 softhsm2 opensc curl openssl jq systemd util-linux libcap2-bin rng-tools5 chromium libbz2-dev)
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

# build_from_source (.npmrc) makes every native dependency compile here; nothing prebuilt
# is downloaded. `npm install` follows package-lock.json and runs our install script (the
# addon) and prepare (TypeScript). Not `npm ci`: it refuses a lock file in which rollup's
# optional per-platform packages are absent, and the registry reachable here has no
# manifests for most of them, so no lock file made here can list them.
npm install --no-audit --no-fund
