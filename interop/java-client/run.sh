#!/usr/bin/env bash
# Runs one client-interop scenario: the stock Apache RocketMQ Java client (5.3.3 by default) against
# the name server (and the broker it routes to) at HOST:PORT.
#
#   bash interop/java-client/run.sh SCENARIO --namesrv HOST:PORT [--topic T] [--group G] [--count N]
#        [--suffix S] [--timeout SECONDS] [--settle-ms MS] [--phase send|consume|check|fill|resume --state FILE]
#        [--codes-file FILE] [--strict true] [--client 5|4] [--body-size BYTES] [--resume-count N]
#
# Scenarios: produce-consume async-oneway-batch tag-filter retry rebalance orderly broadcast lite-pull
# dlq-lite-pull restart-check admin disk-full sql-filter timers transactions request-reply pop-consume acl
# (see README.md). --client 4 uses rocketmq-client 4.9.8 instead (every scenario except admin, acl and
# pop-consume). Topic and group names get a fresh suffix per run unless --suffix is given
# (restart-check, and timers' restart variant: both phases
# take the same --state FILE; the consume phase reads the topic and group from it; disk-full:
# --phase fill, then --phase resume, likewise, on a broker whose disk fills up, see
# disk-full-apache.sh; transactions: --phase send, then --phase check). sql-filter needs a broker
# with enablePropertyFilter=true, transactions one with short transaction check settings (see
# Transactions.java).
#
# stdout: `PASS <scenario> <details>` (exit 0), or `FAIL <scenario>: ...` and the first 20
# differences, expected vs actual (exit 1). Exit 2: usage error. stderr: Maven, client warnings, and
# the request codes the client sent/received with their response codes. Needs a JDK 17+ and Maven.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

client=5
args=()
while [ "$#" -gt 0 ]; do
    case "$1" in
        --client) client="${2:?--client needs 5 or 4}"; shift 2 ;;
        *) args+=("$1"); shift ;;
    esac
done
case "$client" in
    5 | 5.3.3) module="$here" ;;
    4 | 4.9.8) module="$here/v4" ;;
    *) echo "run.sh: --client must be 5 or 4" >&2; exit 2 ;;
esac

# shellcheck source=../java-up-to-date.sh
. "$here/../java-up-to-date.sh"
cp_file="$module/target/client-classpath.txt"
stamp="$module/target/.built"
build() {
    java_build_up_to_date "$stamp" "$cp_file" "$module/pom.xml" "$here/src" && return 0
    # One Maven run: compile, then write the runtime classpath to a file (no exec plugin needed).
    mvn -q -B -f "$module/pom.xml" compile dependency:build-classpath \
        -Dmdep.outputFile="$cp_file" -Dmdep.includeScope=runtime 1>&2
    touch "$stamp"
}

mkdir -p "$module/target"
if command -v flock >/dev/null 2>&1; then
    # Tests may start several runs at once; they must not compile into target/ concurrently.
    (
        flock 9
        build
    ) 9>"$module/target/.build.lock"
else
    build
fi

exec java -Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \
    -cp "$module/target/classes:$(cat "$cp_file")" dev.silo.interop.client.Scenarios "${args[@]}"
