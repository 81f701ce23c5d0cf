#!/usr/bin/env bash
# Runs the 5.x SDK interop scenarios with the Apache RocketMQ Go client
# (github.com/apache/rocketmq-clients/golang/v5 v5.1.4, pinned in go.mod/go.sum) through a proxy:
#
#   bash interop/sdk5/go/run.sh --endpoint HOST:PORT --suffix S [--only "SCEN ..."] [--timeout SECONDS] [--namesrv HOST:PORT] [--verbose]
#
# Prints one "PASS go <scenario> <details>" or "FAIL go <scenario>: <what differed>" line per
# scenario (normal fifo delay transaction redeliver push); exit status 0 iff none failed, 2 on a
# usage error. The topics and groups of the run suffix must exist (interop/sdk5/resources.sh; the
# push scenario reads its DLQ with the group sdk5-go-dlq-S, which must not be the push group).
# The scenarios run concurrently; --timeout bounds each one (default 150). --verbose traces their
# steps on stderr. --namesrv is accepted and unused.
#
# The binary is built into ${SILO_CACHE:-$HOME/.cache/silo}/sdk5-go/ (the go command's module and
# build caches make a second run download and compile nothing); the SDK's logs go to logs/ there.
# Needs a Go toolchain 1.24 or later.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cache="${SILO_CACHE:-$HOME/.cache/silo}/sdk5-go"
mkdir -p "$cache/logs"

# go.sum is complete: build read-only whatever -mod the caller's GOFLAGS asks for.
flags=""
for f in ${GOFLAGS:-}; do
    case "$f" in
        -mod=*) ;;
        *) flags="$flags $f" ;;
    esac
done
export GOFLAGS="${flags# } -mod=readonly"
GOFLAGS="${GOFLAGS# }"

(cd "$here" && go build -o "$cache/sdk5-go" .)
status=0
"$cache/sdk5-go" --log-dir "$cache/logs" "$@" || status=$?
exit "$status"
