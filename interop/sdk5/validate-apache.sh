#!/usr/bin/env bash
# Validates the 5.x SDK suites against the reference: Apache RocketMQ 5.3.3's name server and broker
# (interop/java-client/rocketmq-server.sh) behind Apache's proxy 5.3.3 (interop/proxy/proxy.sh), all
# on free loopback ports in a fresh directory. Creates the resources, runs each language's suite
# once, stops everything and prints the suites' lines and a closing "N passed, M failed, K skipped".
#
#   bash interop/sdk5/validate-apache.sh [--dir DIR] [--keep] [LANG...]
#
# LANG: java go python node rust (default: all). --dir DIR: data directory (must not exist yet;
# default a new temporary one, removed at the end unless --keep). Each suite's stderr goes to
# DIR/LANG.err. Exit status 0 only if no scenario failed.
#
# The broker takes recalls (recallMessageEnable, off by default in Java) and checks transactions
# every 2 s, 2 s after their send, up to 60 times, and writes its op
# records every 500 ms (transactionOpBatchInterval: with Apache's 3 s the checks of a 2 s interval
# find transactions already ended and commit them again); the suites' orphaned transactions are
# recovered within seconds.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$here/../.."
dir=""
keep=false
langs=()
while [ "$#" -gt 0 ]; do
    case "$1" in
        --dir) dir="${2:?}"; shift 2 ;;
        --keep) keep=true; shift ;;
        -h | --help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}" >&2; exit 2 ;;
        -*) echo "validate-apache: unknown option $1" >&2; exit 2 ;;
        *) langs+=("$1"); shift ;;
    esac
done
[ "${#langs[@]}" -gt 0 ] || langs=(java go python node rust)

if [ -z "$dir" ]; then
    dir="$(mktemp -d "${TMPDIR:-/tmp}/silo-sdk5-apache.XXXXXX")"
else
    [ ! -e "$dir" ] || { echo "validate-apache: $dir already exists" >&2; exit 2; }
    mkdir -p "$dir"
fi
dir="$(cd "$dir" && pwd)"

busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
# Four consecutive free ports below the ephemeral range: name server, broker (which also takes
# broker-2 and broker+1), proxy gRPC, proxy remoting.
pick() {
    local tries=0 p
    while [ "$tries" -lt 200 ]; do
        tries=$((tries + 1))
        p=$((20000 + RANDOM % 12000))
        if ! busy "$p" && ! busy $((p + 10)) && ! busy $((p + 8)) && ! busy $((p + 11)) \
            && ! busy $((p + 20)) && ! busy $((p + 21)); then
            echo "$p"
            return 0
        fi
    done
    echo "validate-apache: no free ports" >&2
    exit 1
}
base="$(pick)"
namesrv=$base broker=$((base + 10)) grpc=$((base + 20)) remoting=$((base + 21))

cleanup() {
    bash "$repo/interop/proxy/proxy.sh" stop "$dir/proxy" >/dev/null 2>&1 || true
    bash "$repo/interop/java-client/rocketmq-server.sh" stop "$dir/srv" >/dev/null 2>&1 || true
    if [ "$keep" = false ]; then rm -rf "$dir"; fi
}
trap cleanup EXIT

printf 'transactionCheckInterval=2000\ntransactionTimeOut=2000\ntransactionCheckMax=60\ntransactionOpBatchInterval=500\nrecallMessageEnable=true\n' \
    >"$dir/broker.conf"
bash "$repo/interop/java-client/rocketmq-server.sh" start "$dir/srv" --namesrv-port "$namesrv" \
    --broker-port "$broker" --broker-conf-extra "$dir/broker.conf" >&2
bash "$repo/interop/proxy/proxy.sh" start "$dir/proxy" --namesrv "127.0.0.1:$namesrv" --grpc-port "$grpc" \
    --remoting-port "$remoting" >&2

suffix="v$(date +%s)"
bash "$here/resources.sh" --namesrv "127.0.0.1:$namesrv" --suffix "$suffix" "${langs[@]}" >&2 2>"$dir/resources.err"

passed=0 failed=0 skipped=0
for lang in "${langs[@]}"; do
    out="$(bash "$here/$lang/run.sh" --endpoint "127.0.0.1:$grpc" --namesrv "127.0.0.1:$namesrv" \
        --suffix "$suffix" 2>"$dir/$lang.err" || true)"
    printf '%s\n' "$out"
    passed=$((passed + $(grep -c '^PASS' <<<"$out" || true)))
    failed=$((failed + $(grep -c '^FAIL' <<<"$out" || true)))
    skipped=$((skipped + $(grep -c '^SKIP' <<<"$out" || true)))
    if ! grep -q '^PASS' <<<"$out"; then
        echo "FAIL $lang: the suite printed no PASS line (see $dir/$lang.err)"
        failed=$((failed + 1))
    fi
done
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
