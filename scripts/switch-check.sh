#!/usr/bin/env bash
# Before switching a server from RedisBloom to redis-bf: lists the keys redis-bf cannot load,
# those of RedisBloom's Count-Min sketch (type CMSk-TYPE, CMS.*), Top-K (TopK-TYPE, TOPK.*) and
# T-Digest (TDIS-TYPE, TDIGEST.*) families, per logical database, with counts and a few names.
#
#   scripts/switch-check.sh [redis-cli options]
#   scripts/switch-check.sh -h 10.0.0.5 -p 6380 --user admin --pass secret --tls --cacert ca.pem
#
# The connection options (-h, -p, -s, -u, -a, --user, --pass, --askpass, --no-auth-warning, --tls,
# --sni, --cacert, --cacertdir, --cert, --key, --tls-ciphers, --tls-ciphersuites, --insecure) go to
# redis-cli as they are, and only those (one that changes what redis-cli sends or prints, such as
# -r, -i, -n, -3 or --csv, is refused: the check reads every database itself); it needs nothing but
# redis-cli (any version from 6.0) and bash. It runs `SCAN cursor COUNT n TYPE <type>` (n = 1000,
# SWITCH_CHECK_COUNT to change it), one bounded call at a time, never KEYS. In a cluster, run it
# against every primary.
#
# Exit status: 0 when there are none (the switch can go ahead as far as these types go); 1 when
# some exist (keep RedisBloom on this server, or move or remove those keys first); 2 when the
# check could not be made (connection, authentication, an error reply).
set -uo pipefail

fail() {
  echo "switch-check: $*" >&2
  exit 2
}

# Only connection options reach redis-cli.
args=("$@")
i=0
while [ "$i" -lt "${#args[@]}" ]; do
  case "${args[$i]}" in
    -h | -p | -s | -u | -a | --user | --pass | --sni | --cacert | --cacertdir | --cert | --key | \
      --tls-ciphers | --tls-ciphersuites)
      [ $((i + 1)) -lt "${#args[@]}" ] || fail "${args[$i]} needs a value"
      i=$((i + 2)) ;;
    --askpass | --no-auth-warning | --tls | --insecure) i=$((i + 1)) ;;
    *) fail "${args[$i]}: not a connection option of redis-cli this check passes on (see the top of $0)" ;;
  esac
done

count="${SWITCH_CHECK_COUNT:-1000}"
shown="${SWITCH_CHECK_SHOW:-5}"
cli=(redis-cli "$@")
# redis-cli's stderr (connection errors, the warning about -a) is kept apart from its replies.
errs="$(mktemp)"
trap 'rm -f "$errs"' EXIT

# type name | family | commands
families=(
  "CMSk-TYPE|Count-Min sketch|CMS.*"
  "TopK-TYPE|Top-K|TOPK.*"
  "TDIS-TYPE|T-Digest|TDIGEST.*"
)

# `INFO keyspace` names the databases that hold keys (db0:keys=...).
info="$("${cli[@]}" INFO keyspace 2>"$errs")"
case "$info" in
  *"# Keyspace"*) ;;
  *) fail "no INFO keyspace reply from the server (${info:-$(cat "$errs")}); check the redis-cli options" ;;
esac
dbs=$(printf '%s\n' "$info" | tr -d '\r' | sed -n 's/^db\([0-9][0-9]*\):keys=.*/\1/p')

found=0
for db in $dbs; do
  for fam in "${families[@]}"; do
    IFS='|' read -r type what commands <<<"$fam"
    cursor=0
    n=0
    names=()
    while :; do
      # --no-raw prints each key quoted and escaped on one line, whatever bytes it holds:
      #   1) "cursor"
      #   2) 1) "key"
      #      2) "other key"
      out="$("${cli[@]}" -n "$db" --no-raw SCAN "$cursor" COUNT "$count" TYPE "$type" 2>"$errs")"
      case "$out" in
        *"(error)"*"nknown type"*)
          # A server that does not know the type name (no module registers it) has no such key.
          break ;;
        *"(error)"*|"") fail "db$db: SCAN ... TYPE $type: ${out:-$(cat "$errs")}" ;;
      esac
      next=$(printf '%s\n' "$out" | sed -n '1s/^1) "\([0-9]*\)"$/\1/p')
      [ -n "$next" ] || fail "db$db: unexpected SCAN reply: $out"
      while IFS= read -r key; do
        n=$((n + 1))
        [ "${#names[@]}" -lt "$shown" ] && names+=("$key")
      done < <(printf '%s\n' "$out" | sed -n '2,$s/^\(2) \)\{0,1\} *[0-9][0-9]*) \(".*"\)$/\2/p')
      cursor=$next
      [ "$cursor" = 0 ] && break
    done
    if [ "$n" -gt 0 ]; then
      found=$((found + n))
      list=$(printf '%s, ' "${names[@]}")
      more=""
      [ "$n" -gt "${#names[@]}" ] && more=", ..."
      echo "db$db: $n $what key(s) (type $type, RedisBloom's $commands): ${list%, }$more"
    fi
  done
done

if [ "$found" -gt 0 ]; then
  echo "switch-check: $found key(s) of RedisBloom's Count-Min sketch, Top-K or T-Digest families:" \
    "redis-bf implements only Bloom (BF.*) and cuckoo (CF.*) filters, and a server switched to it" \
    "refuses to start with these in its RDB or AOF. Keep RedisBloom on this server, or move or" \
    "remove these keys first (then rewrite the AOF, BGREWRITEAOF, if it is on)."
  exit 1
fi
aof=$("${cli[@]}" INFO persistence 2>/dev/null | tr -d '\r' | sed -n 's/^aof_enabled:\(.*\)/\1/p')
echo "switch-check: no Count-Min sketch, Top-K or T-Digest keys in any database."
if [ "$aof" = 1 ]; then
  echo "switch-check: the AOF is on: if such keys or their commands were ever written, run" \
    "BGREWRITEAOF (and wait for it) before switching, so that no CMS.*, TOPK.* or TDIGEST.*" \
    "command is left to replay."
fi
exit 0
