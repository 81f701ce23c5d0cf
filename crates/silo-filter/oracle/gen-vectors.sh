#!/usr/bin/env bash
# Records Apache RocketMQ's answers for the selector cases:
#
#   bash crates/silo-filter/oracle/gen-vectors.sh
#
# reads crates/silo-filter/tests/vectors/selector-cases.txt and rewrites
# crates/silo-filter/tests/vectors/java-5.3.3.txt. Needs a JDK 17+ and Maven (the first run
# downloads rocketmq-filter from Maven Central). The output is deterministic.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
vectors="$here/../tests/vectors"
cd "$here"

mvn -q -B compile dependency:build-classpath \
    -Dmdep.outputFile=target/classpath.txt -Dmdep.includeScope=runtime

exec java -cp "target/classes:$(cat target/classpath.txt)" dev.silo.filter.oracle.SelectorOracle \
    "$vectors/selector-cases.txt" "$vectors/java-5.3.3.txt"
