#!/usr/bin/env bash
# Runs the gRPC request fuzz target for SECONDS (default 300), starting from the committed seeds.
# Needs a nightly toolchain: cargo +nightly fuzz (install with `cargo install cargo-fuzz`).
set -euo pipefail
cd "$(dirname "$0")"
seconds=${1:-300}
mkdir -p corpus/requests
cargo +nightly fuzz run -O requests corpus/requests seeds/requests -- \
  -max_total_time="$seconds" -max_len=65536 -print_final_stats=1 2>&1 | tee fuzz-requests.log | grep -E '^(stat::|Done|==|SUMMARY)' || true
test -z "$(ls artifacts/requests 2>/dev/null)" || { echo "crash in requests: see artifacts/requests"; exit 1; }
