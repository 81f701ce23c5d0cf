#!/usr/bin/env bash
# Validates the client-interop scenarios against the reference Apache RocketMQ 5.3.3 name server and
# broker: starts both (rocketmq-server.sh) in a fresh data directory on free loopback ports, runs
# every scenario once (run.sh), restarts the broker in the middle of restart-check, of the timers
# restart variant and of the transactions two-phase run, stops the servers and prints one line per
# scenario plus a closing "N passed, M failed" line. The broker runs with
# enablePropertyFilter=true (Apache's default is false), which sql-filter needs, and with short
# transaction check settings, which transactions needs; the other scenarios notice neither.
#
#   bash interop/java-client/validate-apache.sh [--client 5|4] [--dir DIR] [--keep]
#        [--only "SCENARIO ..."] [--namesrv-port P --broker-port Q] [-- EXTRA RUN.SH OPTIONS]
#
# --namesrv-port/--broker-port: use these ports (the broker also takes Q-2 and Q+1) instead of
# free ones picked at random between 20000 and 40100.
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
namesrv_port=""
broker_port=""
while [ "$#" -gt 0 ]; do
    case "$1" in
        --client) client="${2:?}"; shift 2 ;;
        --dir) dir="${2:?}"; shift 2 ;;
        --keep) keep=true; shift ;;
        --only) only="${2:?}"; shift 2 ;;
        --namesrv-port) namesrv_port="${2:?}"; shift 2 ;;
        --broker-port) broker_port="${2:?}"; shift 2 ;;
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

if [ -z "$namesrv_port" ] || [ -z "$broker_port" ]; then
    pick_ports
fi
# transactions: checks every 2 s of half messages 2 s old, op records written within 100 ms (see
# Transactions.java), up to 60 checks while the producer is away during the broker restart. timers:
# recalls one message (recallMessageEnable is off by default in Java).
printf 'enablePropertyFilter=true\ntransactionCheckInterval=2000\ntransactionTimeOut=2000\ntransactionOpBatchInterval=100\ntransactionCheckMax=60\nrecallMessageEnable=true\n' \
    >"$dir/broker-extra.conf"
bash "$here/rocketmq-server.sh" start "$dir" --namesrv-port "$namesrv_port" --broker-port "$broker_port" \
    --broker-conf-extra "$dir/broker-extra.conf" >&2
namesrv="127.0.0.1:$namesrv_port"

scenarios="produce-consume async-oneway-batch tag-filter retry rebalance orderly broadcast lite-pull dlq-lite-pull restart-check sql-filter timers transactions request-reply"
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
    elif [ "$s" = timers ]; then
        # One run, then the restart variant: timers due 10-75 s later, the broker restarted meanwhile.
        state="$dir/timers.state"
        if run timers timers &&
            run timers timers-send --phase send --state "$state" &&
            bash "$here/rocketmq-server.sh" stop "$dir" --broker-only &&
            bash "$here/rocketmq-server.sh" start "$dir" >&2 &&
            run timers timers-consume --phase consume --state "$state"; then
            passed=$((passed + 1))
        else
            failed=$((failed + 1))
        fi
    elif [ "$s" = transactions ]; then
        # One run, then half messages left open across a broker restart, settled by a new producer.
        state="$dir/transactions.state"
        if run transactions transactions &&
            run transactions transactions-send --phase send --state "$state" &&
            bash "$here/rocketmq-server.sh" stop "$dir" --broker-only &&
            bash "$here/rocketmq-server.sh" start "$dir" >&2 &&
            run transactions transactions-check --phase check --state "$state"; then
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
