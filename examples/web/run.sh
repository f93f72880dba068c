#!/usr/bin/env bash
# Browser test of the sign-up example: installs the locked npm packages (redis, puppeteer-core;
# no browser is downloaded) on first use, builds the module if it is missing, and runs test.mjs
# with Debian's Chromium (apt-get install chromium; scripts/install-deps.sh does it).
#   SCREENSHOT=docs/signup-page.png examples/web/run.sh   also refreshes the screenshot in docs/checking-locally.md
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
if [ -n "${BF_MODULE:-}" ]; then
  BF_MODULE="$(realpath "$BF_MODULE")"
  export BF_MODULE
fi
if [ -n "${SCREENSHOT:-}" ]; then
  SCREENSHOT="$(realpath -m "$SCREENSHOT")"
  export SCREENSHOT
fi
if [ -z "${BF_MODULE:-}" ] && [ ! -f "$here/../../target/release/libredis_bf.so" ]; then
  (cd "$here/../.." && cargo build --release)
fi
cd "$here"
if [ ! -d node_modules/puppeteer-core ] || [ ! -d node_modules/redis ]; then
  npm ci --no-audit --no-fund --loglevel=error
fi
exec node test.mjs "$@"
