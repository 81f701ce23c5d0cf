#!/usr/bin/env bash
# Creates the topics and consumer groups of the 5.x SDK suites for the given languages, in one JVM
# (Apache's admin client, DefaultMQAdminExt from rocketmq-tools 5.3.3, in interop/java-client), then
# reads each one back from the broker and waits until the name server routes every topic.
#
#   bash interop/sdk5/resources.sh --namesrv HOST:PORT --suffix S [--cluster C] [--timeout SECONDS]
#       [--access-key K --secret-key S] LANG...
#
# For each LANG (java, go, python, node, rust, ...): topics sdk5-LANG-{normal,fifo,delay,txn,
# redeliver,push}-S with 4 read / 4 write queues and message.type NORMAL, FIFO, DELAY, TRANSACTION,
# NORMAL, NORMAL (as `mqadmin updateTopic -a +message.type=...` sends it), on every master of
# cluster C (default DefaultCluster); groups sdk5-LANG-{normal,fifo,delay,transaction,redeliver,push,
# dlq}-S, the fifo group with consumeMessageOrderly=true, the push group with retryMaxTimes=2 (dlq:
# for reading the push group's dead letters). First waits (bounded by --timeout, default 60 s) until
# a master of C is registered with the name server. With --access-key/--secret-key every request is
# signed (a broker with authenticationEnabled refuses unsigned ones).
#
# stdout: one "created ..." line per language and "OK resources ..." (exit 0), or "FAIL resources:"
# and the differences (exit 1). Exit 2: usage error. stderr: Maven, client warnings, request codes.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
module="$here/../java-client"

usage() {
    awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}" >&2
    exit 2
}

args=()
have_namesrv=false
have_suffix=false
langs=0
while [ "$#" -gt 0 ]; do
    case "$1" in
        --namesrv) [ "$#" -ge 2 ] || usage; have_namesrv=true; args+=("$1" "$2"); shift 2 ;;
        --suffix) [ "$#" -ge 2 ] || usage; have_suffix=true; args+=("$1" "$2"); shift 2 ;;
        --cluster | --timeout | --access-key | --secret-key) [ "$#" -ge 2 ] || usage; args+=("$1" "$2"); shift 2 ;;
        -h | --help) usage ;;
        -*) echo "resources: unknown option $1" >&2; usage ;;
        *) langs=$((langs + 1)); args+=("$1"); shift ;;
    esac
done
[ "$have_namesrv" = true ] && [ "$have_suffix" = true ] && [ "$langs" -gt 0 ] || usage

# The same build as interop/java-client/run.sh (same classpath file, same lock), so the two never
# compile into target/ at once; skipped when nothing changed since this script's last build.
# shellcheck source=../java-up-to-date.sh
. "$(dirname "${BASH_SOURCE[0]}")/../java-up-to-date.sh"
cp_file="$module/target/client-classpath.txt"
stamp="$module/target/.built"
build() {
    java_build_up_to_date "$stamp" "$cp_file" "$module/pom.xml" "$module/src" && return 0
    mvn -q -B -f "$module/pom.xml" compile dependency:build-classpath \
        -Dmdep.outputFile="$cp_file" -Dmdep.includeScope=runtime 1>&2
    touch "$stamp"
}
mkdir -p "$module/target"
if command -v flock >/dev/null 2>&1; then
    (
        flock 9
        build
    ) 9>"$module/target/.build.lock"
else
    build
fi

exec java -Xmx128m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \
    -cp "$module/target/classes:$(cat "$cp_file")" dev.silo.interop.client.Sdk5Resources "${args[@]}"
