#!/usr/bin/env bash
# Runs the Rust client interop scenarios (stock rocketmq-client-rust from crates.io) from any directory:
#
#   interop/rust/run.sh SCENARIO --namesrv HOST:PORT [--count N] [--timeout SECS]
#
# SCENARIO is produce-consume (or all, the same here). Prints "PASS <scenario> <details>" and
# exits 0, or prints the differences and exits 1 (2 for a usage error).
#
# Builds the program first with the debug profile (quicker to build than release; this is a
# standalone cargo workspace pinned by its own Cargo.lock). Honours CARGO_TARGET_DIR when set,
# else uses interop/rust/target. The first build compiles the client crate and takes a while.
# Client logs go to stderr; set RUST_LOG (default "warn") for more, e.g. RUST_LOG=info.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
target_dir="${CARGO_TARGET_DIR:-$here/target}"
# A relative CARGO_TARGET_DIR means the caller's directory, as it does for cargo itself.
case "$target_dir" in
    /*) ;;
    *) target_dir="$PWD/$target_dir" ;;
esac
cd "$here"

cargo build --locked --quiet --manifest-path "$here/Cargo.toml" --target-dir "$target_dir"
status=0
"$target_dir/debug/silo-interop-rust" "$@" || status=$?
exit "$status"
