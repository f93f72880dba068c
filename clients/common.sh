# Shared steps of the client and example run scripts; source it, do not run it.
#   . "$here/../common.sh"   (from a folder two levels under the repository root)

# The repository root, found from this file's own place.
bf_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# Makes BF_MODULE absolute (the tests run from another folder) when it is set, and builds the
# release module when it is not set and target/release/libredis_bf.so is missing.
bf_module_ready() {
  if [ -n "${BF_MODULE:-}" ]; then
    BF_MODULE="$(realpath "$BF_MODULE")"
    export BF_MODULE
  elif [ ! -f "$bf_root/target/release/libredis_bf.so" ]; then
    (cd "$bf_root" && cargo build --release)
  fi
}

# Creates clients/python/.venv on first use and installs the `redis` package into it when it
# does not import.
bf_python_venv() {
  local venv="$bf_root/clients/python/.venv"
  if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
  fi
  if ! "$venv/bin/python" -c 'import redis' 2>/dev/null; then
    "$venv/bin/pip" install --quiet --disable-pip-version-check redis
  fi
}
