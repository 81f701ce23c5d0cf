#!/usr/bin/env bash
# Runs the 5.x SDK interop scenarios with the Node.js SDK (rocketmq-client-nodejs 1.0.8) against a
# RocketMQ proxy's gRPC endpoint (plaintext):
#
#   bash interop/sdk5/node/run.sh --endpoint HOST:PORT --suffix S [--namesrv HOST:PORT]
#                                 [--only "SCEN ..."] [--timeout SECONDS]
#
# Scenarios: normal fifo delay transaction redeliver push (all by default), on the resources that
# interop/sdk5/resources.sh creates for "node" and suffix S. Prints one line per scenario,
# "PASS node <scenario> <details>" or "FAIL node <scenario>: <what differed>", and exits 0 iff none
# failed (2 for a usage error). --timeout bounds each wait of a scenario (default 60); --namesrv
# is accepted but not needed. The scenarios run concurrently (disjoint topics and groups).
#
# Calls setup.sh first (installs the SDK into ${SILO_CACHE:-$HOME/.cache/silo}/sdk5-node, a no-op
# once done). SDK logs go to that directory's logs/node-S.log, never to stdout; set SDK5_DEBUG=1
# for the SDK's debug lines too.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

usage() {
    awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}" >&2
    exit 2
}

# Checked here too, so that a usage error needs no install.
endpoint=""
suffix=""
args=("$@")
while [ "$#" -gt 0 ]; do
    case "$1" in
        --endpoint) endpoint="${2:-}"; [ "$#" -ge 2 ] || usage; shift 2 ;;
        --suffix) suffix="${2:-}"; [ "$#" -ge 2 ] || usage; shift 2 ;;
        --namesrv|--only|--timeout) [ "$#" -ge 2 ] || usage; shift 2 ;;
        *) usage ;;
    esac
done
[ -n "$endpoint" ] && [ -n "$suffix" ] || usage

prefix="$(bash "$here/setup.sh")"
mkdir -p "$prefix/logs" "$prefix/home"
# HOME: the SDK's consume services log through its default logger, a file under $HOME/logs.
status=0
HOME="$prefix/home" NODE_PATH="$prefix/node_modules" SDK5_LOG_DIR="$prefix/logs" \
    node "$here/scenarios.js" "${args[@]}" || status=$?
exit "$status"
