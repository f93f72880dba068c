#!/usr/bin/env bash
# Build the project's three publishable packages into a temporary folder, as a release would,
# and check what each contains (the LICENSE and README at least, at the project's version):
# - the core crate: `cargo package -p redis-bf-core` (verified: the packaged crate is built on
#   its own, which fetches its dependencies from crates.io when they are not cached);
# - the JavaScript checker: `npm pack` in clients/js (no network);
# - the Python checker: `python -m build` (sdist and wheel) of clients/python/redis_bf_check,
#   with PyPI's `build` in a venv under target/package-venv (installed on first use).
# Nothing is published and nothing in the tree changes.
#   scripts/package.sh            into a temporary folder, removed afterwards
#   OUT=dist scripts/package.sh   into ./dist, kept
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

. scripts/rust-env.sh
# npm and python3-venv (quiet when nothing is missing; scripts/test.sh has run it already).
scripts/install-deps.sh test
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)
[ -n "$version" ] || { echo "package.sh: no version in Cargo.toml's [workspace.package]" >&2; exit 1; }

if [ -n "${OUT:-}" ]; then
  mkdir -p "$OUT"
  out=$(cd "$OUT" && pwd)
else
  out=$(mktemp -d)
  trap 'rm -rf "$out"' EXIT
fi

has() { # has ARCHIVE_LISTING_FILE PATH...: each path is in the listing
  local list=$1
  shift
  for p in "$@"; do
    grep -qx -- "$p" "$list" || { echo "package.sh: $p missing from the package:" >&2; cat "$list" >&2; exit 1; }
  done
}

# The core crate. --allow-dirty: the script also checks a tree with uncommitted edits; the
# target directory is the temporary one, so the verification build leaves target/ alone.
cargo package -p redis-bf-core --allow-dirty --quiet --target-dir "$out/cargo"
crate="$out/cargo/package/redis-bf-core-$version.crate"
tar -tzf "$crate" >"$out/crate.list"
has "$out/crate.list" "redis-bf-core-$version/Cargo.toml" "redis-bf-core-$version/README.md" \
  "redis-bf-core-$version/LICENSE" "redis-bf-core-$version/src/lib.rs"
echo "package.sh: $(basename "$crate") ($(wc -l <"$out/crate.list") files)"

# The JavaScript checker.
(cd clients/js && npm pack --silent --pack-destination "$out" >/dev/null)
tgz="$out/redis-bf-check-$version.tgz"
tar -tzf "$tgz" >"$out/npm.list"
has "$out/npm.list" package/package.json package/README.md package/LICENSE package/src/index.js \
  package/src/index.d.ts
echo "package.sh: $(basename "$tgz") ($(wc -l <"$out/npm.list") files)"

# The Python checker. The venv is kept under target/ (like target/valkey-venv) so later runs
# need no network; `build` makes its isolated build environment with setuptools from PyPI.
venv=target/package-venv
if ! "$venv/bin/python" -c 'import build' >/dev/null 2>&1; then
  echo "package.sh: installing build (PyPI) into $venv, for the Python checker's sdist and wheel"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check build
fi
# `build` writes its egg-info next to the sources: build from a copy, so the tree stays clean.
cp -r clients/python/redis_bf_check "$out/py-src"
rm -rf "$out/py-src/__pycache__"
"$venv/bin/python" -m build --outdir "$out/py" "$out/py-src" >"$out/py-build.log" 2>&1 ||
  { cat "$out/py-build.log" >&2; exit 1; }
sdist="$out/py/redis_bf_check-$version.tar.gz"
wheel="$out/py/redis_bf_check-$version-py3-none-any.whl"
tar -tzf "$sdist" >"$out/sdist.list"
has "$out/sdist.list" "redis_bf_check-$version/pyproject.toml" "redis_bf_check-$version/README.md" \
  "redis_bf_check-$version/LICENSE" "redis_bf_check-$version/__init__.py"
"$venv/bin/python" -c 'import sys, zipfile; print("\n".join(zipfile.ZipFile(sys.argv[1]).namelist()))' \
  "$wheel" >"$out/wheel.list"
has "$out/wheel.list" redis_bf_check/__init__.py
grep -q "^redis_bf_check-$version.dist-info/.*LICENSE" "$out/wheel.list" ||
  { echo "package.sh: no LICENSE in the wheel:" >&2; cat "$out/wheel.list" >&2; exit 1; }
# The wheel installs and imports at the right version, away from the source tree.
"$venv/bin/python" -m venv "$out/try"
"$out/try/bin/pip" install --quiet --disable-pip-version-check --no-index "$wheel"
got=$(cd "$out" && "$out/try/bin/python" -c 'import redis_bf_check; print(redis_bf_check.__version__)')
[ "$got" = "$version" ] || { echo "package.sh: the wheel imports as version $got, not $version" >&2; exit 1; }
echo "package.sh: $(basename "$sdist"), $(basename "$wheel")"

echo "package.sh: version $version packaged (crate, npm, sdist, wheel)${OUT:+ in $out}"
