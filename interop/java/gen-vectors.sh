#!/usr/bin/env bash
# Regenerates the golden vectors from the Apache RocketMQ reference jars.
#
#   bash interop/java/gen-vectors.sh crates/silo-wire/tests/vectors/java-5.3.3.txt
#
# Needs a JDK 17+ and Maven; the first run downloads the RocketMQ jars from Maven Central into
# the default local repository. The output is deterministic: re-running must give identical bytes.
set -euo pipefail

if [ "$#" -ne 1 ]; then
    echo "usage: $0 OUTFILE" >&2
    exit 2
fi

out="$1"
case "$out" in
    /*) ;;
    *) out="$PWD/$out" ;;
esac

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"

# One Maven run: compile, then write the runtime classpath to a file (no exec plugin needed).
mvn -q -B compile dependency:build-classpath \
    -Dmdep.outputFile=target/classpath.txt -Dmdep.includeScope=runtime

exec java -cp "target/classes:$(cat target/classpath.txt)" dev.silo.interop.GoldenVectors "$out"
