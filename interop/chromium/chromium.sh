#!/usr/bin/env bash
# Prints a command line that runs headless Chromium for the web console tests: `chromium` on
# PATH if there is one, else Debian's package and the libraries it needs that this machine
# lacks (what apt would install, resolved by apt itself in a simulated install), downloaded
# once and unpacked outside the clone (see ../debian-unpack.sh). The printed line is an `env`
# with the library path set, then the binary. Exit 1 with the reason on stderr if neither works.
set -euo pipefail

if command -v chromium >/dev/null 2>&1; then
    command -v chromium
    exit 0
fi
packages="$(apt-get -s install --no-install-recommends chromium 2>/dev/null | awk '/^Inst /{print $2}' || true)"
# shellcheck disable=SC2086
root="$(bash "$(dirname "$0")/../debian-unpack.sh" chromium usr/lib/chromium/chromium ${packages:-chromium})"
bin="$root/usr/lib/chromium/chromium"
lib="$root/usr/lib/x86_64-linux-gnu"
line=(env "LD_LIBRARY_PATH=$lib:$lib/pulseaudio${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$bin")
"${line[@]}" --headless --no-sandbox --version >/dev/null 2>&1 || { echo "chromium: $bin does not run" >&2; exit 1; }
echo "${line[@]}"
