#!/usr/bin/env bash
# Prints the path of a Prometheus server binary for the metrics tests: `prometheus` on PATH if
# there is one, else Debian's package, downloaded once (apt-get download, no install, no root
# needed beyond apt's own) and unpacked under $SILO_CACHE (default ~/.cache/silo), outside the
# clone. Exit 1 with the reason on stderr if neither works.
set -euo pipefail

if command -v prometheus >/dev/null 2>&1; then
    command -v prometheus
    exit 0
fi
cache="${SILO_CACHE:-$HOME/.cache/silo}/prometheus"
bin="$cache/root/usr/bin/prometheus"
if [ ! -x "$bin" ]; then
    mkdir -p "$cache"
    (
        flock 9
        if [ ! -x "$bin" ]; then
            work="$(mktemp -d "$cache/download.XXXXXX")"
            trap 'rm -rf "$work"' EXIT
            (cd "$work" && apt-get download prometheus >&2)
            rm -rf "$cache/root"
            dpkg-deb -x "$work"/prometheus_*.deb "$cache/root"
        fi
    ) 9>"$cache/.lock"
fi
"$bin" --version >/dev/null 2>&1 || { echo "prometheus: $bin does not run" >&2; exit 1; }
echo "$bin"
