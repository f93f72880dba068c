# shellcheck shell=bash
# Sourced by bench/instructions.sh and bench/persist_instructions.sh: one redis-server at a time
# under valgrind's callgrind, in a folder of WORK, on a free port, always stopped on exit.
#   cg_start NAME MODULE.so [SERVER ARGS…]  starts it (dir $WORK/NAME; sets PORT, VG_PID, CG_DIR)
#   cg_stop                                  shuts it down and waits for valgrind to write its files
#   cg_total FILE                            the instructions a callgrind output file counted
# Needs SERVER (the redis-server binary) and WORK (a temporary folder, removed on exit).
command -v valgrind >/dev/null || { echo "$(basename "$0"): needs valgrind (apt-get install valgrind)" >&2; exit 2; }
VG_PID=
PORT=
CG_DIR=
cg_cleanup() {
  if [ -n "$VG_PID" ] && kill -0 "$VG_PID" 2>/dev/null; then
    redis-cli -p "$PORT" shutdown nosave >/dev/null 2>&1 || kill "$VG_PID" 2>/dev/null || true
    wait "$VG_PID" 2>/dev/null || true
  fi
  rm -rf "$WORK"
}
trap cg_cleanup EXIT
trap 'exit 1' INT TERM

cg_start() {
  local name=$1 module=$2
  shift 2
  CG_DIR=$WORK/$name
  mkdir -p "$CG_DIR"
  PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  valgrind --tool=callgrind --callgrind-out-file="$CG_DIR/out.%p" --dump-instr=no \
    "$SERVER" --port "$PORT" --bind 127.0.0.1 --dir "$CG_DIR" --save "" --appendonly no "$@" \
    --loadmodule "$(realpath "$module")" --logfile "$CG_DIR/server.log" >"$CG_DIR/valgrind.log" 2>&1 &
  VG_PID=$!
  for _ in $(seq 300); do redis-cli -p "$PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done
  redis-cli -p "$PORT" ping >/dev/null 2>&1 || { cat "$CG_DIR/valgrind.log" "$CG_DIR/server.log" >&2; exit 1; }
}

cg_stop() {
  redis-cli -p "$PORT" shutdown nosave >/dev/null 2>&1 || true
  wait "$VG_PID" 2>/dev/null || true
  VG_PID=
}

cg_total() { awk '/^(summary|totals):/ {print $2; exit}' "$1"; }
