#!/usr/bin/env bash
# Runs the 5.x SDK interop scenarios with the Rust SDK (the `rocketmq` crate 5.0.0 from
# crates.io, apache/rocketmq-clients' Rust client) against a RocketMQ proxy's gRPC endpoint
# (plaintext):
#
#   bash interop/sdk5/rust/run.sh --endpoint HOST:PORT --suffix S [--namesrv HOST:PORT]
#                                 [--only "SCEN ..."] [--timeout SECONDS]
#
# Scenarios: normal fifo delay transaction redeliver push (all by default), on the resources that
# interop/sdk5/resources.sh creates for "rust" and suffix S. Prints one line per scenario,
# "PASS rust <scenario> <details>", "FAIL rust <scenario>: <what differed>" or "SKIP rust
# <scenario>: why" (push: the SDK has no push consumer), and exits 0 iff none failed (2 for a
# usage error). --timeout bounds each wait of a scenario (default 60); --namesrv is accepted but
# not needed. The scenarios run concurrently (disjoint topics and groups).
#
# Builds the program first with the debug profile (a standalone cargo workspace pinned by its own
# Cargo.lock). The target directory is $CARGO_TARGET_DIR when set, else
# ${SILO_CACHE:-$HOME/.cache/silo}/sdk5-rust/target. The first build compiles the SDK and its
# tonic/prost stack and takes a while. The SDK logs to its own terminal format; that goes to
# ${SILO_CACHE:-$HOME/.cache/silo}/sdk5-rust/logs/rust-S.log unless SDK5_LOG_STDERR=1.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cache="${SILO_CACHE:-$HOME/.cache/silo}/sdk5-rust"

usage() {
    awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}" >&2
    exit 2
}

# Checked here too, so that a usage error needs no build.
endpoint=""
suffix=""
args=("$@")
while [ "$#" -gt 0 ]; do
    case "$1" in
        --endpoint) endpoint="${2:-}"; [ "$#" -ge 2 ] || usage; shift 2 ;;
        --suffix) suffix="${2:-}"; [ "$#" -ge 2 ] || usage; shift 2 ;;
        --only)
            [ "$#" -ge 2 ] || usage
            for s in ${2//,/ }; do
                case "$s" in
                    normal|fifo|delay|transaction|redeliver|push) ;;
                    *) echo "sdk5-rust: unknown scenario $s" >&2; usage ;;
                esac
            done
            shift 2 ;;
        --timeout)
            [ "$#" -ge 2 ] || usage
            [[ "$2" =~ ^[0-9]+([.][0-9]+)?$ ]] && [[ "$2" =~ [1-9] ]] ||
                { echo "sdk5-rust: --timeout must be a positive number" >&2; usage; }
            shift 2 ;;
        --namesrv) [ "$#" -ge 2 ] || usage; shift 2 ;;
        *) usage ;;
    esac
done
[ -n "$endpoint" ] && [ -n "$suffix" ] || usage

target_dir="${CARGO_TARGET_DIR:-$cache/target}"
# A relative CARGO_TARGET_DIR means the caller's directory, as it does for cargo itself.
case "$target_dir" in
    /*) ;;
    *) target_dir="$PWD/$target_dir" ;;
esac

cargo build --locked --quiet --manifest-path "$here/Cargo.toml" --target-dir "$target_dir"

status=0
if [ "${SDK5_LOG_STDERR:-}" = 1 ]; then
    "$target_dir/debug/silo-interop-sdk5-rust" "${args[@]}" || status=$?
else
    mkdir -p "$cache/logs"
    log="$cache/logs/rust-$suffix.log"
    "$target_dir/debug/silo-interop-sdk5-rust" "${args[@]}" 2>>"$log" || status=$?
    # The scenario lines say what failed; point at the log for the SDK's side of it.
    [ "$status" = 0 ] || echo "sdk5-rust: SDK log in $log" >&2
fi
exit "$status"
