#!/usr/bin/env bash
# Runs one interop scenario with the C++ RocketMQ client (librocketmq.so from PyPI's `rocketmq`
# 0.4.4, driven through its ctypes binding) against the name server at HOST:PORT.
#
#   bash interop/cpp/run.sh SCENARIO --namesrv HOST:PORT [--count N] [--timeout S] [--settle-ms MS]
#        [--suffix S] [--capture FILE]
#   bash interop/cpp/run.sh proxy --namesrv HOST:PORT --capture FILE [--timeout S]
#
# Scenarios: produce push-concurrent push-orderly pull (see README.md). stdout: `PASS <scenario>
# <details>` (exit 0) or `FAIL <scenario>: ...` (exit 1); exit 2 is a usage error. --capture FILE
# records every remoting frame as a JSON line (and a request-code summary on stderr). The client's
# own log goes to a scratch HOME (not the real one); on failure its last lines go to stderr.
# setup.sh installs the client on first use.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
python="$(bash "$here/setup.sh")"

scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT

status=0
HOME="$scratch" "$python" "$here/scenarios.py" "$@" || status=$?
if [ "$status" -eq 1 ]; then
    for log in "$scratch"/logs/rocketmq-cpp/*; do
        [ -f "$log" ] || continue
        echo "--- last lines of the C++ client's log ($(basename "$log")):" >&2
        tail -n 30 "$log" >&2
    done
fi
exit "$status"
