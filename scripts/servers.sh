#!/usr/bin/env bash
# Builds the servers the tests run on besides Debian 12's Redis 7.0, from Debian's source
# packages, and prints their paths (one a line, in the order asked):
#   scripts/servers.sh [redis-8.0|redis-8.6|valkey-9.1|all]...     (default: all)
#
#   redis-8.0    newest redis 8.0.x source package (sid)          target/servers/redis-8.0/redis-server
#   redis-8.6    newest redis 8.6.x source package (experimental) target/servers/redis-8.6/redis-server
#   valkey-9.1   newest valkey 9.1.x source package (sid)         target/servers/valkey-9.1/valkey-server
#
# Nothing is downloaded beyond Debian's archive: a private apt configuration in
# target/servers/apt (its own sources list with deb-src lines for trixie, sid and experimental
# on the machine's own Debian mirror, its own state and cache; the system's apt is not touched)
# is updated, `apt-get source --download-only` fetches the newest matching version, and the
# upstream tree (the .orig tarball: Debian's patches are not applied) is built with plain
# `make` in its src/ directory, so the server gets the jemalloc of the tree's deps/ (active
# defrag works). Each build is kept in a machine-wide cache keyed by the exact package version
# ($BF_SERVERS_CACHE, default ~/.cache/redis-bf/servers) and copied from there, so a fresh
# clone on the same machine reuses it; a build takes 2-4 minutes on 2 cores.
#
# BF_SERVERS_DIR (default target/servers) moves the output; DEBIAN_MIRROR names the mirror
# (default: the machine's own Debian mirror, else deb.debian.org). Progress goes to stderr.
# Exits non-zero, saying why, when a suite cannot be reached or a build fails.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { echo "servers.sh: $*" >&2; }
die() {
  log "$*"
  exit 1
}

out="${BF_SERVERS_DIR:-$PWD/target/servers}"
cache="${BF_SERVERS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/redis-bf/servers}"
suites=(trixie sid experimental)

# target -> "source package, upstream version prefix, server binary"
spec() {
  case "$1" in
    redis-8.0) echo "redis 8.0 redis-server" ;;
    redis-8.6) echo "redis 8.6 redis-server" ;;
    valkey-9.1) echo "valkey 9.1 valkey-server" ;;
    *) return 1 ;;
  esac
}

targets=()
for a in "${@:-all}"; do
  case "$a" in
    all) targets+=(redis-8.0 redis-8.6 valkey-9.1) ;;
    *)
      spec "$a" >/dev/null || {
        echo "usage: scripts/servers.sh [redis-8.0|redis-8.6|valkey-9.1|all]..." >&2
        exit 2
      }
      targets+=("$a")
      ;;
  esac
done

# The machine's Debian mirror: the first URI of an enabled apt source whose path is /debian
# (deb822 .sources files and one-line .list files alike).
mirror() {
  local f uri
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
    [ -r "$f" ] || continue
    uri=$(awk '
      /^[[:space:]]*#/ { next }
      /^URIs:/ { for (i = 2; i <= NF; i++) if ($i ~ /\/debian\/?$/) { print $i; exit } }
      /^deb(-src)?[[:space:]]/ {
        for (i = 2; i <= NF; i++) if ($i !~ /^\[/ && $i !~ /\]$/) { if ($i ~ /\/debian\/?$/) print $i; break }
      }' "$f" | head -n 1)
    if [ -n "$uri" ]; then
      echo "${uri%/}"
      return
    fi
  done
  echo "http://deb.debian.org/debian"
}

apt_dir="$out/apt"
apt_ready=0
setup_apt() { # writes the private apt configuration and updates its source indexes, once
  [ "$apt_ready" -eq 1 ] && return
  local m keyring="/usr/share/keyrings/debian-archive-keyring.gpg" s
  m="${DEBIAN_MIRROR:-$(mirror)}"
  mkdir -p "$apt_dir/etc/sources.list.d" "$apt_dir/etc/preferences.d" "$apt_dir/state/lists/partial" \
    "$apt_dir/cache/archives/partial"
  : >"$apt_dir/state/status"
  : >"$apt_dir/etc/sources.list"
  for s in "${suites[@]}"; do
    echo "deb-src [signed-by=$keyring] $m $s main" >>"$apt_dir/etc/sources.list"
  done
  cat >"$apt_dir/apt.conf" <<EOF
Dir::Etc::SourceList "$apt_dir/etc/sources.list";
Dir::Etc::SourceParts "$apt_dir/etc/sources.list.d";
Dir::Etc::Preferences "$apt_dir/etc/preferences";
Dir::Etc::PreferencesParts "$apt_dir/etc/preferences.d";
Dir::State "$apt_dir/state";
Dir::State::Lists "$apt_dir/state/lists";
Dir::State::status "$apt_dir/state/status";
Dir::Cache "$apt_dir/cache";
Acquire::Languages "none";
APT::Sandbox::User "root";
EOF
  export APT_CONFIG="$apt_dir/apt.conf"
  log "apt-get update of the deb-src indexes of ${suites[*]} on $m (private configuration in $apt_dir)"
  local ulog="$apt_dir/update.log"
  apt-get -q update >"$ulog" 2>&1 || true
  # apt-get update goes on past an unreachable suite (keeping an older index if it has one):
  # check that each suite was fetched and that its index is there.
  local host_path="${m#*://}"
  host_path="${host_path//\//_}"
  for s in "${suites[@]}"; do
    if grep -q "Failed to fetch .*/dists/$s/" "$ulog" ||
      ! compgen -G "$apt_dir/state/lists/${host_path}_dists_${s}_main_source_Sources*" >/dev/null; then
      cat "$ulog" >&2
      die "cannot reach Debian suite '$s' (deb-src $m $s main): apt-get update did not fetch its source index (output above)"
    fi
  done
  apt_ready=1
}

# newest VERSION of source package PKG whose upstream version starts with PREFIX.
newest() {
  local pkg=$1 prefix=$2
  apt-cache showsrc "$pkg" 2>/dev/null | awk -v pkg="$pkg" '
    /^Package:/ { p = $2 }
    /^Version:/ && p == pkg { print $2 }' |
    while read -r v; do
      u=${v#*:}
      u=${u%-*}
      case "$u" in "$prefix".*) echo "$v" ;; esac
    done | sort -V | tail -n 1
}

build() { # build TARGET: prints the path of its server binary
  local target=$1 pkg prefix bin version key dest
  read -r pkg prefix bin < <(spec "$target")
  setup_apt
  version=$(newest "$pkg" "$prefix")
  [ -n "$version" ] || die "no $pkg $prefix.x source package in ${suites[*]}"
  key="${pkg}_${version//:/_}"
  dest="$out/$target"
  if [ ! -x "$cache/$key/$bin" ]; then
    local work upstream orig
    work=$(mktemp -d "${TMPDIR:-/tmp}/bf-servers.XXXXXX")
    trap 'rm -rf "$work"' EXIT
    log "$target: downloading $pkg $version (apt-get source --download-only)"
    (cd "$work" && apt-get -q source --download-only "$pkg=$version") >"$work/source.log" 2>&1 || {
      cat "$work/source.log" >&2
      die "$target: apt-get source of $pkg $version failed (output above)"
    }
    upstream=${version#*:}
    upstream=${upstream%-*}
    orig=$(compgen -G "$work/${pkg}_${upstream}.orig.tar.*" | head -n 1) ||
      die "$target: no ${pkg}_${upstream}.orig.tar.* among the downloaded files"
    mkdir "$work/tree"
    tar -xf "$orig" -C "$work/tree" --strip-components=1
    log "$target: building $bin of $pkg $upstream (make -j2 -C src $bin, log $work/build.log)"
    make -j2 -C "$work/tree/src" "$bin" >"$work/build.log" 2>&1 || {
      tail -n 40 "$work/build.log" >&2
      die "$target: the build failed (last lines above)"
    }
    mkdir -p "$cache/$key.tmp"
    cp "$work/tree/src/$bin" "$cache/$key.tmp/$bin"
    echo "$version" >"$cache/$key.tmp/VERSION"
    rm -rf "$cache/$key"
    mv "$cache/$key.tmp" "$cache/$key"
    rm -rf "$work"
    trap - EXIT
  else
    log "$target: $pkg $version already built ($cache/$key)"
  fi
  if [ "$(cat "$dest/VERSION" 2>/dev/null)" != "$version" ] || [ ! -x "$dest/$bin" ]; then
    mkdir -p "$dest"
    cp "$cache/$key/$bin" "$dest/$bin.tmp"
    mv "$dest/$bin.tmp" "$dest/$bin"
    echo "$version" >"$dest/VERSION"
  fi
  "$dest/$bin" --version >&2 || die "$target: $dest/$bin does not run"
  echo "$dest/$bin"
}

for t in "${targets[@]}"; do
  build "$t"
done
