#!/usr/bin/env bash
# Installs the C++ RocketMQ client for the interop scenarios: PyPI's `rocketmq` 0.4.4, a thin ctypes
# binding whose wheel ships the C++ client itself (`rocketmq/librocketmq.so`, with its own zlib).
#
#   bash interop/cpp/setup.sh        # prints the venv's python on stdout
#
# The venv lives outside the clone, in ${SILO_CACHE:-$HOME/.cache/silo}/cpp-client-venv; running this
# again installs nothing when the pinned version is already there. The wheel is manylinux1 x86_64
# and has no Python dependencies (only enum34 on Python <= 3.4); the library needs only glibc
# (libdl, libpthread, librt, libm, libc) and libstdc++/libgcc_s from the system.
set -euo pipefail

version=0.4.4
venv="${SILO_CACHE:-$HOME/.cache/silo}/cpp-client-venv"
python="${PYTHON:-python3}"

if [ "$(uname -s)-$(uname -m)" != "Linux-x86_64" ]; then
    echo "setup.sh: the rocketmq $version wheel exists for Linux x86_64 only (and macOS)" >&2
    exit 1
fi

installed() {
    [ -x "$venv/bin/python" ] &&
        [ "$("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("rocketmq"))' 2>/dev/null)" = "$version" ]
}

if ! installed; then
    mkdir -p "$(dirname "$venv")"
    [ -x "$venv/bin/python" ] || "$python" -m venv "$venv" 1>&2
    "$venv/bin/python" -m pip install -q --disable-pip-version-check --only-binary=:all: \
        "rocketmq==$version" 1>&2
fi

# Import the binding (that loads librocketmq.so) and make one call into the library.
if ! "$venv/bin/python" - <<'EOF' 1>&2; then
import rocketmq.client
from rocketmq.ffi import dll, _DYLIB_PATH
handle = dll.CreateMessage(b"setup-check")
assert handle, "CreateMessage returned NULL"
dll.DestroyMessage(handle)
EOF
    echo "setup.sh: rocketmq $version is installed in $venv but librocketmq.so does not load;" \
        "check it with: ldd $venv/lib/python3*/site-packages/rocketmq/librocketmq.so" >&2
    exit 1
fi
echo "$venv/bin/python"
