#!/usr/bin/env bash
# Installs the system packages redis-bf needs, on Debian or Ubuntu, when some are missing.
# scripts/start.sh and scripts/test.sh run it first; it is quiet when nothing is missing, and
# otherwise prints one line saying what it installs and why, then runs apt-get (through sudo
# when not root; apt's own output goes to a log shown only on failure).
#
#   scripts/install-deps.sh [run|test]     (default: test)
#
#   run:  redis-server                      the server the module loads into
#         libclang1-14, libclang-common-14-dev
#                                           libclang and clang's headers, for bindgen when the
#                                           redis-module crate builds (else libclang-dev)
#         build-essential                   only when there is no C compiler (cc)
#   test: the above, and
#         redis-tools                       redis-cli, and redis-benchmark for bench/server.sh
#         python3, python3-venv             the shared test cases; the redis-py client tests
#         nodejs, npm                       the node-redis client tests
#         chromium                          the browser test of examples/web (headless)
#
# A Rust toolchain is not a system package: scripts/rust-env.sh asks for rustup.
set -euo pipefail

log() { echo "install-deps: $*"; }

PURPOSE="${1:-test}"
case "$PURPOSE" in
  run) why="to build redis-bf and run it (scripts/start.sh)" ;;
  test) why="to build and test redis-bf (scripts/test.sh)" ;;
  *) echo "usage: scripts/install-deps.sh [run|test]" >&2; exit 2 ;;
esac

installed() { # installed PKG: true when dpkg has PKG fully installed
  [ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" = "install ok installed" ]
}

available() { # available PKG: true when apt has an installation candidate for PKG
  local cand
  cand=$(apt-cache policy "$1" 2>/dev/null | awk '/Candidate:/ {print $2; exit}')
  [ -n "$cand" ] && [ "$cand" != "(none)" ]
}

if ! command -v dpkg-query >/dev/null 2>&1 || ! command -v apt-get >/dev/null 2>&1; then
  # Not Debian/Ubuntu: say what is needed only when something looks missing.
  if ! command -v redis-server >/dev/null 2>&1 || ! command -v cc >/dev/null 2>&1; then
    log "this is not a Debian/Ubuntu (apt) system; install by hand the packages listed at the top of $0" >&2
  fi
  exit 0
fi

missing=()
installed redis-server || missing+=(redis-server)
need_libclang=0
if ! { installed libclang1-14 && installed libclang-common-14-dev; } && ! installed libclang-dev; then
  need_libclang=1
fi
command -v cc >/dev/null 2>&1 || missing+=(build-essential)
if [ "$PURPOSE" = test ]; then
  installed redis-tools || missing+=(redis-tools)
  command -v python3 >/dev/null 2>&1 || missing+=(python3)
  python3 -m venv --help >/dev/null 2>&1 || missing+=(python3-venv)
  command -v node >/dev/null 2>&1 || missing+=(nodejs)
  command -v npm >/dev/null 2>&1 || missing+=(npm)
  # The sign-up example's browser test (examples/web) drives Debian's headless Chromium.
  command -v chromium >/dev/null 2>&1 || missing+=(chromium)
fi

if [ "${#missing[@]}" -eq 0 ] && [ "$need_libclang" -eq 0 ]; then
  exit 0
fi

show="${missing[*]}"
if [ "$need_libclang" -eq 1 ]; then show="${show:+$show }libclang"; fi
SUDO=()
how="apt-get"
if [ "$(id -u)" -ne 0 ]; then
  if ! command -v sudo >/dev/null 2>&1; then
    log "missing $show, needed $why; not root and no sudo: install them as root" >&2
    exit 1
  fi
  SUDO=(sudo)
  how="sudo apt-get"
fi

aptlog=$(mktemp)
trap 'rm -f "$aptlog"' EXIT
apt() {
  if ! "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get "$@" >>"$aptlog" 2>&1; then
    cat "$aptlog" >&2
    log "apt-get $1 failed (output above)" >&2
    exit 1
  fi
}

apt update -q
if [ "$need_libclang" -eq 1 ]; then
  if available libclang1-14 && available libclang-common-14-dev; then
    missing+=(libclang1-14 libclang-common-14-dev)
  else
    missing+=(libclang-dev)
  fi
fi
log "installing ${missing[*]} with $how, needed $why"
apt install -y -q --no-install-recommends -o DPkg::Lock::Timeout=300 "${missing[@]}"

# Debian's package may start a system-wide redis-server on port 6379, which scripts/start.sh
# wants for itself. Stop and disable the service we just installed (tests pick their own ports).
case " ${missing[*]} " in
  *" redis-server "*)
    if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
      "${SUDO[@]}" systemctl disable --now redis-server >/dev/null 2>&1 || true
    elif command -v service >/dev/null 2>&1; then
      "${SUDO[@]}" service redis-server stop >/dev/null 2>&1 || true
      if command -v update-rc.d >/dev/null 2>&1; then
        "${SUDO[@]}" update-rc.d redis-server disable >/dev/null 2>&1 || true
      fi
    fi
    ;;
esac
