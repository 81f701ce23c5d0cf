#!/usr/bin/env bash
# Prints the path of a Prometheus server binary for the metrics tests: `prometheus` on PATH if
# there is one, else Debian's package, downloaded once and unpacked outside the clone (see
# ../debian-unpack.sh). Exit 1 with the reason on stderr if neither works.
set -euo pipefail

if command -v prometheus >/dev/null 2>&1; then
    command -v prometheus
    exit 0
fi
root="$(bash "$(dirname "$0")/../debian-unpack.sh" prometheus usr/bin/prometheus prometheus)"
bin="$root/usr/bin/prometheus"
"$bin" --version >/dev/null 2>&1 || { echo "prometheus: $bin does not run" >&2; exit 1; }
echo "$bin"
