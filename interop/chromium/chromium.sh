#!/usr/bin/env bash
# Prints a command line that runs headless Chromium for the web console tests: `chromium` on
# PATH if there is one, else Debian's package and the libraries it needs that this machine
# lacks, downloaded once (apt-get download, no install, no root) and unpacked under
# $SILO_CACHE (default ~/.cache/silo), outside the clone. The printed line is an `env` with
# the library path set, then the binary. Exit 1 with the reason on stderr if neither works.
set -euo pipefail

if command -v chromium >/dev/null 2>&1; then
    command -v chromium
    exit 0
fi
cache="${SILO_CACHE:-$HOME/.cache/silo}/chromium"
root="$cache/root"
bin="$root/usr/lib/chromium/chromium"
if [ ! -x "$bin" ]; then
    mkdir -p "$cache"
    (
        flock 9
        if [ ! -x "$bin" ]; then
            work="$(mktemp -d "$cache/download.XXXXXX")"
            trap 'rm -rf "$work"' EXIT
            # What apt would install here, resolved by apt itself (a simulated install).
            packages="$(apt-get -s install --no-install-recommends chromium 2>/dev/null | awk '/^Inst /{print $2}')"
            [ -n "$packages" ] || packages=chromium
            # shellcheck disable=SC2086
            (cd "$work" && apt-get download $packages >&2)
            rm -rf "$root"
            for deb in "$work"/*.deb; do dpkg-deb -x "$deb" "$root"; done
        fi
    ) 9>"$cache/.lock"
fi
lib="$root/usr/lib/x86_64-linux-gnu"
line=(env "LD_LIBRARY_PATH=$lib:$lib/pulseaudio${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$bin")
"${line[@]}" --headless --no-sandbox --version >/dev/null 2>&1 || { echo "chromium: $bin does not run" >&2; exit 1; }
echo "${line[@]}"
