#!/usr/bin/env bash
# Validates the client-interop scenarios against the reference Apache RocketMQ 5.3.3 name server and
# broker: starts both (rocketmq-server.sh) in a fresh data directory on free loopback ports, runs
# every scenario once (run.sh), restarts the broker in the middle of restart-check, stops the servers
# and prints one line per scenario plus a closing "N passed, M failed" line.
#
#   bash interop/java-client/validate-apache.sh [--client 5|4] [--dir DIR] [--keep]
#        [--only "SCENARIO ..."] [-- EXTRA RUN.SH OPTIONS]
#
# --dir DIR: data directory (must not exist yet; default a new temporary directory, removed at the
# end unless --keep). The request codes each scenario's client sent go to DIR/codes.txt, each
# scenario's stderr to DIR/SCENARIO.err. Exit status 0 only if every scenario passed.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
client=5
dir=""
keep=false
only=""
extra=()
while [ "$#" -gt 0 ]; do
    case "$1" in
        --client) client="${2:?}"; shift 2 ;;
        --dir) dir="${2:?}"; shift 2 ;;
        --keep) keep=true; shift ;;
        --only) only="${2:?}"; shift 2 ;;
        --) shift; extra=("$@"); break ;;
        *) echo "validate-apache: unknown option $1" >&2; exit 2 ;;
    esac
done

if [ -z "$dir" ]; then
    dir="$(mktemp -d "${TMPDIR:-/tmp}/silo-apache-rocketmq.XXXXXX")"
else
    [ ! -e "$dir" ] || { echo "validate-apache: $dir already exists" >&2; exit 2; }
    mkdir -p "$dir"
fi
dir="$(cd "$dir" && pwd)"

busy() { # PORT
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
    command -v ss >/dev/null 2>&1 && ss -Hltn "sport = :$1" 2>/dev/null | grep -q . && return 0
    return 1
}
pick_ports() {
    local tries=0 p q
    while [ "$tries" -lt 200 ]; do
        tries=$((tries + 1))
        p=$((20000 + RANDOM % 20000))
        q=$((p + 100))
        if ! busy "$p" && ! busy "$q" && ! busy $((q - 2)) && ! busy $((q + 1)); then
            namesrv_port=$p
            broker_port=$q
            return 0
        fi
    done
    echo "validate-apache: no free ports found" >&2
    exit 1
}

cleanup() {
    bash "$here/rocketmq-server.sh" stop "$dir" || true
    if [ "$keep" = false ]; then
        rm -rf "$dir"
    else
        echo "validate-apache: kept $dir" >&2
    fi
}
trap cleanup EXIT

pick_ports
bash "$here/rocketmq-server.sh" start "$dir" --namesrv-port "$namesrv_port" --broker-port "$broker_port" >&2
namesrv="127.0.0.1:$namesrv_port"

scenarios="produce-consume async-oneway-batch tag-filter retry rebalance orderly broadcast lite-pull dlq-lite-pull restart-check"
if [ "$client" = 5 ] || [ "$client" = 5.3.3 ]; then
    scenarios="$scenarios admin"
fi
[ -z "$only" ] || scenarios="$only"

passed=0
failed=0
run() { # SCENARIO LABEL ARGS...
    local s="$1" label="$2" start end rc
    shift 2
    start=$(date +%s.%N)
    set +e
    bash "$here/run.sh" "$s" --namesrv "$namesrv" --client "$client" --codes-file "$dir/codes.txt" \
        "$@" "${extra[@]}" 2>>"$dir/$label.err"
    rc=$?
    set -e
    end=$(date +%s.%N)
    awk -v l="$label" -v rc="$rc" -v s="$start" -v e="$end" \
        'BEGIN { printf "  (%s: exit %d, %.1f s wall including JVM start and build check)\n", l, rc, e - s }'
    return "$rc"
}

for s in $scenarios; do
    if [ "$s" = restart-check ]; then
        state="$dir/restart-check.state"
        if run restart-check restart-check-send --phase send --state "$state" &&
            bash "$here/rocketmq-server.sh" stop "$dir" --broker-only &&
            bash "$here/rocketmq-server.sh" start "$dir" >&2 &&
            run restart-check restart-check-consume --phase consume --state "$state"; then
            passed=$((passed + 1))
        else
            failed=$((failed + 1))
        fi
    elif run "$s" "$s"; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
    fi
done

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
