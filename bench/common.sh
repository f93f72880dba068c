# Shared by the bench shell scripts that start one server of their own (server.sh, window.sh);
# source it after `cd` to the repository.
#
# start_server BINARY MODULE [redis-server options …]: starts BINARY on a free 127.0.0.1 port in
# a temporary directory, with MODULE loaded, no persistence and the given options; sets PORT and
# DIR, waits until it answers (or prints its log and exits), and stops it and removes DIR when
# the script exits. cli ARGS…: redis-cli on that server.
start_server() {
  local binary=$1 module=$2
  shift 2
  PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  DIR=$(mktemp -d /tmp/redis-bf-bench.XXXXXX)
  "$binary" --port "$PORT" --bind 127.0.0.1 --dir "$DIR" --save "" --appendonly no "$@" \
    --loadmodule "$module" --daemonize yes --logfile "$DIR/server.log" --pidfile "$DIR/redis.pid"
  trap stop_server EXIT
  trap 'exit 1' INT TERM
  for _ in $(seq 50); do redis-cli -p "$PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done
  redis-cli -p "$PORT" ping >/dev/null 2>&1 || { cat "$DIR/server.log" >&2; exit 1; }
}

stop_server() {
  local pid
  pid=$(cat "$DIR/redis.pid" 2>/dev/null || true)
  redis-cli -p "$PORT" shutdown nosave >/dev/null 2>&1 || true
  # Wait for the server to exit before removing its directory (it reopens its log per line).
  for _ in $(seq 100); do [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  rm -rf "$DIR"
}

cli() { redis-cli -p "$PORT" "$@"; }
