#!/usr/bin/env bash
# One send, then one SimpleConsumer receive + ack, with the 5.x gRPC Java SDK 5.2.0 (plaintext):
#
#   bash interop/proxy/smoke/run.sh HOST:PORT TOPIC [GROUP|-]
#
# GROUP defaults to smoke-group; "-" only sends. The topic must exist. Exit 0 when the sent message
# came back (matched by message id). The SDK's own logs go under target/sdk-home.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
[ "$#" -ge 2 ] || { sed -n '2,8p' "${BASH_SOURCE[0]}" >&2; exit 2; }
mkdir -p "$here/target/sdk-home"
mvn -q -B -f "$here/pom.xml" compile dependency:build-classpath \
    -Dmdep.outputFile="$here/target/cp.txt" -Dmdep.includeScope=runtime 1>&2
exec java -Xmx256m -Duser.home="$here/target/sdk-home" \
    -cp "$here/target/classes:$(cat "$here/target/cp.txt")" \
    dev.silo.interop.proxy.smoke.SendReceive "$@"
