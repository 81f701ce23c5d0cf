#!/usr/bin/env bash
# The 5.x SDK interop suite for Java: the Apache RocketMQ gRPC Java SDK (rocketmq-client-java 5.2.0,
# plaintext) against a gRPC endpoint, e.g. Apache's proxy in front of a broker. The resources must
# exist first (interop/sdk5/resources.sh --suffix S java).
#
#   bash interop/sdk5/java/run.sh --endpoint HOST:PORT --suffix S [--namesrv HOST:PORT]
#        [--only "SCENARIO ..."] [--timeout SECONDS] [--serial]
#
# Scenarios: normal fifo delay transaction redeliver push (see interop/sdk5/README.md); they run at
# the same time (disjoint topics and groups) unless --serial. --timeout (default 60) bounds every
# wait. --namesrv is accepted and not needed.
#
# stdout: one line per scenario, `PASS java <scenario> <details>` or `FAIL java <scenario>: ...`;
# exit 0 iff none failed, 1 otherwise, 2 on a usage error. stderr: Maven, every difference, client
# errors. The SDK's own logs: ${SILO_CACHE:-$HOME/.cache/silo}/sdk5/java/logs. Needs a JDK 17+ and
# Maven (the first run downloads the SDK into ~/.m2).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

case "${1:-}" in
    "" | -h | --help)
        awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}" >&2
        exit 2
        ;;
esac

log_dir="${SILO_CACHE:-$HOME/.cache/silo}/sdk5/java/logs"
mkdir -p "$log_dir" "$here/target/sdk-home"

cp_file="$here/target/classpath.txt"
stamp="$here/target/.built"
build() {
    # Maven only when something changed since the last build (its check alone takes seconds): one
    # quiet run that compiles and writes the runtime classpath to a file.
    if [ -f "$stamp" ] && [ -f "$cp_file" ] && [ -z "$(find "$here/pom.xml" "$here/src" -newer "$stamp" | head -n 1)" ]; then
        return 0
    fi
    mvn -q -B -f "$here/pom.xml" compile dependency:build-classpath \
        -Dmdep.outputFile="$cp_file" -Dmdep.includeScope=runtime 1>&2
    touch "$stamp"
}
if command -v flock >/dev/null 2>&1; then
    # Concurrent runs must not compile into target/ at once.
    (
        flock 9
        build
    ) 9>"$here/target/.build.lock"
else
    build
fi

# The SDK logs to files under rocketmq.log.root (its console appender stays off); user.home points
# into target/ so nothing else it might write lands in the real home directory.
# `run.sh bench ...` runs the load generator of bench/sdk5-compare instead (full JIT, more heap).
main=dev.silo.interop.sdk5.Suite
jvm=(-Xmx192m -XX:+UseSerialGC -XX:TieredStopAtLevel=1)
if [ "${1:-}" = bench ]; then
    shift
    main=dev.silo.interop.sdk5.Bench
    jvm=(-Xmx1g)
elif [ "${1:-}" = hold ]; then
    # `run.sh hold ...`: a push consumer that stays online for admin tools (Hold.java).
    shift
    main=dev.silo.interop.sdk5.Hold
elif [ "${1:-}" = crash ]; then
    # `run.sh crash ...`: a consumer that holds messages until it is killed, or the one that
    # takes them after (Crash.java).
    shift
    main=dev.silo.interop.sdk5.Crash
fi
exec java "${jvm[@]}" \
    -Duser.home="$here/target/sdk-home" \
    -Drocketmq.log.root="$log_dir" \
    -Dmq.consoleAppender.enabled=false \
    -cp "$here/target/classes:$(cat "$cp_file")" "$main" "$@"
