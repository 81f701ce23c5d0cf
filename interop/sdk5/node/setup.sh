#!/usr/bin/env bash
# Installs the Node.js 5.x gRPC SDK (rocketmq-client-nodejs, pinned by this directory's
# package.json and package-lock.json) into a prefix outside the clone:
#
#   bash interop/sdk5/node/setup.sh          # prints the prefix on stdout
#
# The prefix is ${SILO_CACHE:-$HOME/.cache/silo}/sdk5-node; the packages land in its node_modules
# and the scenarios find them through NODE_PATH. A copy of the lock file is kept beside them, so
# a second run with the same lock file does nothing (and downloads nothing). Needs node >= 16.19
# (the SDK's engines field) and npm. Exit status: 0 ok, 1 failure.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
prefix="${SILO_CACHE:-$HOME/.cache/silo}/sdk5-node"

die() {
    echo "sdk5-node setup: $*" >&2
    exit 1
}

command -v node >/dev/null || die "node not found"
command -v npm >/dev/null || die "npm not found"
node -e '
const [maj, min] = process.versions.node.split(".").map(Number);
process.exit(maj > 16 || (maj === 16 && min >= 19) ? 0 : 1);
' || die "node >= 16.19 needed, found $(node --version)"

if [ -f "$prefix/installed.lock.json" ] &&
    cmp -s "$prefix/installed.lock.json" "$here/package-lock.json" &&
    [ -f "$prefix/node_modules/rocketmq-client-nodejs/package.json" ]; then
    echo "$prefix"
    exit 0
fi

mkdir -p "$prefix"
rm -f "$prefix/installed.lock.json"
cp "$here/package.json" "$here/package-lock.json" "$prefix/"
# npm ci installs exactly the lock file. No install scripts: none of these packages needs one
# (protobufjs's only prints a notice; @node-rs/crc32 ships its binary as a platform package).
(cd "$prefix" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error 1>&2) ||
    die "npm ci failed in $prefix"
cp "$here/package-lock.json" "$prefix/installed.lock.json"
echo "$prefix"
