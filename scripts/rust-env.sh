# Sourced by scripts/start.sh and scripts/test.sh: puts rustup's cargo on PATH when the shell
# lacks it, and stops at once, with the one command that installs Rust, when there is none.
# shellcheck shell=bash
if [ -d "${CARGO_HOME:-$HOME/.cargo}/bin" ]; then
  PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
  export PATH
fi
if ! command -v cargo >/dev/null 2>&1; then
  {
    echo "redis-bf needs a Rust toolchain (cargo), and there is none. Install one with rustup:"
    echo "  curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- -y"
    echo "then run $0 again."
  } >&2
  exit 1
fi
