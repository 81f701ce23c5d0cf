#!/usr/bin/env bash
# Shared by the scripts that fetch a Debian package for a test (prometheus, chromium):
#   debian-unpack.sh NAME BINARY PACKAGE...
# downloads the packages once (apt-get download: no install, no root), unpacks them into
# $SILO_CACHE/NAME/root (default ~/.cache/silo), outside the clone, under a lock, and prints
# that root. BINARY (relative to the root) is what must exist for the unpack to count as done.
set -euo pipefail
name="$1" binary="$2"
shift 2
cache="${SILO_CACHE:-$HOME/.cache/silo}/$name"
root="$cache/root"
if [ ! -x "$root/$binary" ]; then
    mkdir -p "$cache"
    (
        flock 9
        if [ ! -x "$root/$binary" ]; then
            work="$(mktemp -d "$cache/download.XXXXXX")"
            trap 'rm -rf "$work"' EXIT
            (cd "$work" && apt-get download "$@" >&2)
            rm -rf "$root"
            for deb in "$work"/*.deb; do dpkg-deb -x "$deb" "$root"; done
        fi
    ) 9>"$cache/.lock"
fi
echo "$root"
