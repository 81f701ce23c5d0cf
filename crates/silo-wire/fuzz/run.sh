#!/usr/bin/env bash
# Runs every fuzz target for SECONDS each (default 300), starting from the committed seeds.
# Needs a nightly toolchain: cargo +nightly fuzz (install with `cargo install cargo-fuzz`).
set -euo pipefail
cd "$(dirname "$0")"
seconds=${1:-300}
for target in frame header batch records properties json_body receipt_handle ha; do
  mkdir -p "corpus/$target"
  cargo +nightly fuzz run -O "$target" "corpus/$target" "seeds/$target" -- \
    -max_total_time="$seconds" -max_len=65536 -print_final_stats=1 2>&1 | tee "fuzz-$target.log" | grep -E '^(stat::|Done|==|SUMMARY)' || true
  test -z "$(ls artifacts/$target 2>/dev/null)" || { echo "crash in $target: see artifacts/$target"; exit 1; }
done
