#!/usr/bin/env bash
# Installs the Apache RocketMQ Python client for the 5.x SDK interop scenarios: PyPI's
# rocketmq-python-client 5.1.2 with the dependency versions of requirements.txt (the package pins
# none of them, and grpcio/protobuf releases change often).
#
#   bash interop/sdk5/python/setup.sh        # prints the venv's python on stdout
#
# The venv lives outside the clone, in ${SILO_CACHE:-$HOME/.cache/silo}/sdk5-python-venv; running
# this again installs nothing while the venv holds exactly requirements.txt (a copy of it is kept
# in the venv as the marker). Needs Python 3.8+ with the venv module; wheels only.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
req="$here/requirements.txt"
venv="${SILO_CACHE:-$HOME/.cache/silo}/sdk5-python-venv"
python="${PYTHON:-python3}"
marker="$venv/sdk5-requirements.txt"

installed() {
    [ -x "$venv/bin/python" ] && [ -f "$marker" ] && cmp -s "$req" "$marker"
}

if ! installed; then
    mkdir -p "$(dirname "$venv")"
    [ -x "$venv/bin/python" ] || "$python" -m venv "$venv" 1>&2
    rm -f "$marker"
    "$venv/bin/python" -m pip install -q --disable-pip-version-check --only-binary=:all: -r "$req" 1>&2
    "$venv/bin/python" -m pip check 1>&2
    cp "$req" "$marker"
fi

# Import the client (that also loads grpc and the generated protocol classes) without writing
# bytecode or its log directory anywhere.
if ! HOME="$venv" PYTHONDONTWRITEBYTECODE=1 "$venv/bin/python" -c 'import rocketmq; rocketmq.Producer' 1>&2; then
    echo "setup.sh: rocketmq-python-client is installed in $venv but does not import" >&2
    exit 1
fi
echo "$venv/bin/python"
