#!/usr/bin/env bash
# Runs dev.silo.interop.StoreTool: drives the real Apache RocketMQ 5.3.3 DefaultMessageStore to write
# a store directory (plus a manifest of what it wrote), or to open one written by Silo and read every
# message back.
#
#   bash interop/java/store-tool.sh write  STORE_DIR MANIFEST [--count N] [--lmq] [--sync] ...
#   bash interop/java/store-tool.sh verify STORE_DIR MANIFEST [--check-index] [--lmq] ...
#   bash interop/java/store-tool.sh dump   STORE_DIR [...]
#
# Run without arguments for all options. Works from any directory (relative paths are taken from the
# caller's). Needs a JDK 17+ and Maven, like gen-vectors.sh. Only the report goes to stdout; Maven and
# RocketMQ logging go to stderr. Exit status: 0 ok, 1 failure, 2 usage error.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cp_file="$here/target/store-tool-classpath.txt"

# shellcheck source=../java-up-to-date.sh
. "$here/../java-up-to-date.sh"
build() {
    java_build_up_to_date "$here/target/.built" "$cp_file" "$here/pom.xml" "$here/src" && return 0
    # One Maven run: compile, then write the runtime classpath to a file (no exec plugin needed).
    mvn -q -B -f "$here/pom.xml" compile dependency:build-classpath \
        -Dmdep.outputFile="$cp_file" -Dmdep.includeScope=runtime 1>&2
    touch "$here/target/.built"
}

mkdir -p "$here/target"
if command -v flock >/dev/null 2>&1; then
    # Tests may start several runs at once; they must not compile into target/ concurrently.
    (
        flock 9
        build
    ) 9>"$here/target/.store-tool.lock"
else
    build
fi

exec java -Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \
    -cp "$here/target/classes:$(cat "$cp_file")" dev.silo.interop.StoreTool "$@"
