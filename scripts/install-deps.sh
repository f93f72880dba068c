#!/usr/bin/env bash
# Install the system packages redis-bf needs to build and test, on Debian or Ubuntu.
#
#   sudo scripts/install-deps.sh
#
# Installs only what is missing (safe to run again; quick when everything is there):
#   redis-server, redis-tools       the server the module loads into, and redis-cli
#   libclang1-14, libclang-common-14-dev
#                                   libclang and clang's builtin headers, used by bindgen when the
#                                   redis-module crate builds (falls back to libclang-dev)
#   python3                         runs the shared test cases
#   python3-venv, nodejs, npm       the redis-py and node-redis client tests
#   chromium                        the browser test of examples/web (headless)
#   build-essential                 only when there is no C compiler (cc)
# A Rust toolchain is not installed here: get one from rustup.
set -euo pipefail

log() { echo "install-deps: $*"; }

SUDO=()
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    SUDO=(sudo)
  else
    log "not root and sudo is not available; run this script as root" >&2
    exit 1
  fi
fi

if ! command -v dpkg-query >/dev/null 2>&1 || ! command -v apt-get >/dev/null 2>&1; then
  log "this script supports Debian/Ubuntu (apt) only; install the packages listed at its top by hand" >&2
  exit 1
fi

installed() { # installed PKG: true when dpkg has PKG fully installed
  [ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" = "install ok installed" ]
}

available() { # available PKG: true when apt has an installation candidate for PKG
  local cand
  cand=$(apt-cache policy "$1" 2>/dev/null | awk '/Candidate:/ {print $2; exit}')
  [ -n "$cand" ] && [ "$cand" != "(none)" ]
}

missing=()
for pkg in redis-server redis-tools; do
  installed "$pkg" || missing+=("$pkg")
done
need_libclang=0
if ! { installed libclang1-14 && installed libclang-common-14-dev; } && ! installed libclang-dev; then
  need_libclang=1
fi
command -v python3 >/dev/null 2>&1 || missing+=(python3)
# The client tests make a Python venv (redis-py) and use node and npm (node-redis).
python3 -m venv --help >/dev/null 2>&1 || missing+=(python3-venv)
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)
# The sign-up example's browser test (examples/web) drives Debian's headless Chromium.
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v cc >/dev/null 2>&1 || missing+=(build-essential)

if [ "${#missing[@]}" -eq 0 ] && [ "$need_libclang" -eq 0 ]; then
  log "system packages already present"
else
  log "apt-get update"
  "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
  if [ "$need_libclang" -eq 1 ]; then
    if available libclang1-14 && available libclang-common-14-dev; then
      missing+=(libclang1-14 libclang-common-14-dev)
    else
      missing+=(libclang-dev)
    fi
  fi
  log "installing: ${missing[*]}"
  "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
    --no-install-recommends -o DPkg::Lock::Timeout=300 "${missing[@]}"

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
  log "done"
fi

# The Rust toolchain is the user's own (rustup). Under sudo, PATH usually lacks ~/.cargo/bin, so
# also look in the invoking user's home.
cargo_found=0
cargo_homes=("${CARGO_HOME:-$HOME/.cargo}")
if [ -n "${SUDO_USER:-}" ]; then
  cargo_homes+=("$(getent passwd "$SUDO_USER" | cut -d: -f6)/.cargo")
fi
if command -v cargo >/dev/null 2>&1; then
  cargo_found=1
else
  for home in "${cargo_homes[@]}"; do
    if [ -x "$home/bin/cargo" ]; then cargo_found=1; break; fi
  done
fi
if [ "$cargo_found" -eq 0 ]; then
  log "cargo not found: install a Rust toolchain with rustup (https://rustup.rs), then run this again" >&2
  exit 1
fi
