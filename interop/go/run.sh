#!/usr/bin/env bash
# Runs the Go client interop scenarios (stock rocketmq-client-go/v2) from any directory:
#
#   interop/go/run.sh SCENARIO --namesrv HOST:PORT [--count N] [--timeout 60s] [--grace 3s] [--verbose] [--dump N]
#
# SCENARIO is produce-consume, tag-filter, transaction, sql-filter or all. Prints
# "PASS <scenario> <details>" per scenario and exits 0, or prints the differences and exits 1 (2 for
# a usage error). transaction and sql-filter need SQL92 filtering and short transaction checks on
# the broker (see README.md).
#
# Needs a Go toolchain (1.22 or later). The first run fetches the modules pinned in go.mod/go.sum
# through the configured Go module proxy; -mod=mod lets it do so even where go.sum would need
# an entry added.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"

flags=""
for f in ${GOFLAGS:-}; do
    case "$f" in
        -mod=*) ;;
        *) flags="$flags $f" ;;
    esac
done
export GOFLAGS="${flags# } -mod=mod"
GOFLAGS="${GOFLAGS# }"

# Build (cached by the go command) and run the binary rather than `go run`, which would turn every
# failure into exit status 1 and add its own "exit status" line.
bin_dir="$(mktemp -d)"
trap 'rm -rf "$bin_dir"' EXIT
go build -o "$bin_dir/scenarios" ./cmd/scenarios
status=0
"$bin_dir/scenarios" "$@" || status=$?
exit "$status"
