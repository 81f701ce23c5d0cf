#!/usr/bin/env bash
# Apache RocketMQ's admin command line, `mqadmin` (org.apache.rocketmq.tools.command.MQAdminStartup
# from rocketmq-tools 5.3.3, unmodified jars from Maven Central), run as an operator runs it:
#
#   bash interop/java-client/mqadmin.sh COMMAND -n HOST:PORT [options...]
#   bash interop/java-client/mqadmin.sh                 # list the commands
#   bash interop/java-client/mqadmin.sh help COMMAND    # options of one command
#
# stdout is exactly what mqadmin prints. stderr: Maven (first run only), tool warnings and stack
# traces. Like the stock script, mqadmin itself exits 0 even when a command fails; failures show
# as a stack trace on stderr. Needs a JDK 17+ and Maven.
#
# With MQADMIN_ACCESS_KEY and MQADMIN_SECRET_KEY set, every request is signed with them, as the
# stock tool signs when its conf/tools.yml holds accessKey and secretKey (this script writes that
# file into a home of its own for the pair).
#
# Differences from the distribution's bin/mqadmin, none of which change what a command sends or
# prints: the classpath is resolved by Maven (this directory's pom.xml, which depends on
# rocketmq-tools); ROCKETMQ_HOME and the JVM's user.home point at an empty directory under target/
# (so no conf/tools.yml ACL credentials are read and nothing is written to the real home
# directory, unless credentials are given, see above); logging is warnings only, to stderr; and
# the JVM is small.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cp_file="$here/target/mqadmin-classpath.txt"
home="$here/target/mqadmin-home"

classpath_ok() {
    # Resolved before, for the current pom.xml, and every jar still in the local repository.
    [ -s "$cp_file" ] && [ "$cp_file" -nt "$here/pom.xml" ] || return 1
    local IFS=:
    for jar in $(cat "$cp_file"); do
        [ -e "$jar" ] || return 1
    done
}

build() {
    classpath_ok && return 0
    mvn -q -B -f "$here/pom.xml" dependency:build-classpath \
        -Dmdep.outputFile="$cp_file.tmp" -Dmdep.includeScope=runtime 1>&2
    mv "$cp_file.tmp" "$cp_file"
}

mkdir -p "$here/target" "$home"
if command -v flock >/dev/null 2>&1; then
    # The same lock as run.sh: one Maven run at a time in this module.
    (
        flock 9
        build
    ) 9>"$here/target/.build.lock"
else
    build
fi

if [ -n "${MQADMIN_ACCESS_KEY:-}" ]; then
    home="$here/target/mqadmin-home-$(printf '%s' "$MQADMIN_ACCESS_KEY" | cksum | cut -d' ' -f1)"
    mkdir -p "$home/conf"
    printf 'accessKey: %s\nsecretKey: %s\n' "$MQADMIN_ACCESS_KEY" "${MQADMIN_SECRET_KEY:?MQADMIN_SECRET_KEY too}" \
        >"$home/conf/tools.yml"
fi
export ROCKETMQ_HOME="$home"
exec java -Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \
    -Duser.home="$home" \
    -Drmq.logback.configurationFile="$here/src/main/resources/client-logback.xml" \
    -cp "$(cat "$cp_file")" org.apache.rocketmq.tools.command.MQAdminStartup "$@"
