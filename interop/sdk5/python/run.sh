#!/usr/bin/env bash
# Runs the 5.x SDK interop scenarios with the Apache RocketMQ Python client
# (rocketmq-python-client 5.1.2, installed by setup.sh) through a proxy:
#
#   bash interop/sdk5/python/run.sh --endpoint HOST:PORT --suffix S [--only "SCEN ..."] [--timeout SECONDS] [--namesrv HOST:PORT] [--verbose]
#
# Prints one "PASS python <scenario> <details>" or "FAIL python <scenario>: <what differed>" line
# per scenario (normal fifo delay transaction redeliver push); exit status 0 iff none failed, 2 on
# a usage error. The topics and groups of the run suffix must exist (interop/sdk5/resources.sh;
# the push scenario reads its DLQ with the group sdk5-python-dlq-S, which must not be the push
# group). The scenarios run concurrently; --timeout bounds the whole run (default 150). --verbose
# traces their steps on stderr. --namesrv is accepted and unused.
#
# setup.sh (a no-op once installed) prepares the venv in ${SILO_CACHE:-$HOME/.cache/silo}; the
# SDK's log file goes to sdk5-python-logs/ there.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cache="${SILO_CACHE:-$HOME/.cache/silo}"
python="$(bash "$here/setup.sh")"
status=0
PYTHONDONTWRITEBYTECODE=1 "$python" "$here/scenarios.py" --log-dir "$cache/sdk5-python-logs" "$@" || status=$?
exit "$status"
