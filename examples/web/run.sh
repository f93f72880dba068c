#!/usr/bin/env bash
# Browser test of the sign-up example: installs the locked npm packages (redis, puppeteer-core;
# no browser is downloaded) on first use, builds the module if it is missing, and runs test.mjs
# with Debian's Chromium (apt-get install chromium; scripts/install-deps.sh does it).
#   SCREENSHOT=docs/signup-page.png examples/web/run.sh   also refreshes the screenshot in docs/checking-locally.md
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/../../clients/common.sh"
bf_module_ready
if [ -n "${SCREENSHOT:-}" ]; then
  SCREENSHOT="$(realpath -m "$SCREENSHOT")"
  export SCREENSHOT
fi
cd "$here"
if [ ! -d node_modules/puppeteer-core ] || [ ! -d node_modules/redis ]; then
  npm ci --no-audit --no-fund --loglevel=error
fi
exec node test.mjs "$@"
