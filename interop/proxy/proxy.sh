#!/usr/bin/env bash
# Starts or stops the reference Apache RocketMQ proxy 5.3.3 (unmodified rocketmq-proxy jar from
# Maven Central, see pom.xml) in cluster mode, in front of a given name server, or in local mode,
# with an embedded broker registered with that name server; its gRPC and remoting listeners (and in
# local mode the broker's) are on 127.0.0.1 only and every file it writes is under DIR (local mode:
# plus the broker's store, wherever BROKER_CONF puts it).
#
#   bash interop/proxy/proxy.sh start DIR --namesrv HOST:PORT --grpc-port P --remoting-port Q [options]
#   bash interop/proxy/proxy.sh stop  DIR
#   bash interop/proxy/proxy.sh status DIR
#
# start: writes DIR/rmq-proxy.json, starts the proxy through dev.silo.interop.proxy.LoopbackProxy
# (the stock ProxyStartup binds every interface and has no listen-address setting), waits until
# both ports accept connections, then checks with `ss` that the process listens on loopback only
# (it is stopped again if not). Prints "grpc=127.0.0.1:P remoting=127.0.0.1:Q".
# Options:
#   --cluster NAME        rocketMQClusterName (default DefaultCluster)
#   --timeout SECONDS     bound on the wait (default 120)
#   --heap SIZE           -Xms/-Xmx (default 512m)
#   --conf-extra FILE     a JSON object whose members are merged into rmq-proxy.json (needs python3)
#   --local BROKER_CONF   local mode: the proxy starts an Apache broker in its own JVM from the
#                         broker properties file BROKER_CONF (as written by
#                         ../java-client/rocketmq-server.sh: bindAddress must be a loopback address),
#                         with --namesrv overriding its namesrvAddr. Its ports (listenPort, listenPort-2,
#                         haListenPort, default listenPort+1) must be free; start also waits for
#                         listenPort. gRPC clients are then registered with that broker itself.
# Environment: PROXY_JAVA_OPTS is appended to the JVM options.
#
# stop: SIGTERM (the proxy's shutdown hooks run), SIGKILL after 60 s.
#
# Files in DIR: rmq-proxy.json, proxy.pid, logs/proxy.log (the proxy's own logging), logs/proxy.out
# (stdout/stderr). Needs a JDK 17+ and Maven (the first run downloads the jars). Exit status: 0 ok,
# 1 failure, 2 usage error.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cp_file="$here/target/proxy-classpath.txt"
MAIN=dev.silo.interop.proxy.LoopbackProxy

usage() {
    awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}" >&2
    exit 2
}

die() {
    echo "proxy: $*" >&2
    exit 1
}

[ "$#" -ge 2 ] || usage
cmd="$1"
dir="$2"
shift 2
case "$dir" in
    /*) ;;
    *) dir="$PWD/$dir" ;;
esac

namesrv=""
grpc_port=""
remoting_port=""
cluster=DefaultCluster
timeout=120
heap=512m
conf_extra=""
local_conf=""
while [ "$#" -gt 0 ]; do
    case "$1" in
        --namesrv) namesrv="${2:?}"; shift 2 ;;
        --grpc-port) grpc_port="${2:?}"; shift 2 ;;
        --remoting-port) remoting_port="${2:?}"; shift 2 ;;
        --cluster) cluster="${2:?}"; shift 2 ;;
        --timeout) timeout="${2:?}"; shift 2 ;;
        --heap) heap="${2:?}"; shift 2 ;;
        --conf-extra) conf_extra="${2:?}"; shift 2 ;;
        --local) local_conf="${2:?}"; shift 2 ;;
        *) echo "proxy: unknown option $1" >&2; usage ;;
    esac
done

# A pid file is trusted only while that pid still runs the launcher, so a recycled pid is never
# signalled.
live_pid() {
    local f="$dir/proxy.pid" pid
    [ -f "$f" ] || return 0
    pid="$(cat "$f")"
    if [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q "$MAIN"; then
        echo "$pid"
    fi
}

stop_proxy() {
    local pid deadline
    pid="$(live_pid)"
    if [ -z "$pid" ]; then
        rm -f "$dir/proxy.pid"
        return 0
    fi
    kill -TERM "$pid" 2>/dev/null || true
    deadline=$((SECONDS + 60))
    while kill -0 "$pid" 2>/dev/null && [ "$SECONDS" -lt "$deadline" ]; do
        sleep 0.2
    done
    if kill -0 "$pid" 2>/dev/null; then
        echo "proxy: pid $pid did not stop in 60 s; killing it" >&2
        kill -KILL "$pid" 2>/dev/null || true
        while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
    fi
    rm -f "$dir/proxy.pid"
    echo "proxy: stopped (pid $pid)" >&2
}

port_busy() {
    if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then
        return 0
    fi
    if command -v ss >/dev/null 2>&1 && ss -Hltn "sport = :$1" 2>/dev/null | grep -q .; then
        return 0
    fi
    return 1
}

wait_port() { # PORT PID
    local deadline=$((SECONDS + timeout))
    while ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; do
        kill -0 "$2" 2>/dev/null || return 1
        [ "$SECONDS" -lt "$deadline" ] || return 1
        sleep 0.2
    done
}

show_logs() {
    local f
    for f in "$dir/logs/proxy.out" "$dir/logs/proxy.log"; do
        [ -f "$f" ] || continue
        echo "---- last lines of $f" >&2
        tail -n 30 "$f" >&2
    done
}

# shellcheck source=../java-up-to-date.sh
. "$here/../java-up-to-date.sh"
build() {
    local sources=("$here/pom.xml")
    [ -d "$here/src" ] && sources+=("$here/src")
    java_build_up_to_date "$here/target/.built" "$cp_file" "${sources[@]}" && return 0
    mvn -q -B -f "$here/pom.xml" compile dependency:build-classpath \
        -Dmdep.outputFile="$cp_file" -Dmdep.includeScope=runtime 1>&2
    touch "$here/target/.built"
}

case "$cmd" in
    stop)
        [ -d "$dir" ] || exit 0
        stop_proxy
        exit 0
        ;;
    status)
        p="$(live_pid)"
        echo "proxy: ${p:-stopped}"
        [ -n "$p" ]
        exit $?
        ;;
    start) ;;
    *) usage ;;
esac

[ -n "$namesrv" ] && [ -n "$grpc_port" ] && [ -n "$remoting_port" ] ||
    die "start needs --namesrv, --grpc-port and --remoting-port"
[ -z "$(live_pid)" ] || die "a proxy is already running from $dir (pid $(live_pid))"
proxy_mode=cluster
broker_conf_json=""
broker_ports=()
if [ -n "$local_conf" ]; then
    case "$local_conf" in
        /*) ;;
        *) local_conf="$PWD/$local_conf" ;;
    esac
    [ -r "$local_conf" ] || die "cannot read broker config $local_conf"
    # The last assignment wins, as in java.util.Properties; the defaults are the broker's own.
    conf_value() {
        sed -n "s/^[[:space:]]*$1[[:space:]]*[=:][[:space:]]*\([0-9][0-9]*\)[[:space:]]*\$/\1/p" "$local_conf" | tail -n 1
    }
    broker_port="$(conf_value listenPort)"
    broker_port="${broker_port:-10911}"
    ha_port="$(conf_value haListenPort)"
    [ -n "$ha_port" ] && [ "$ha_port" -gt 0 ] || ha_port=$((broker_port + 1))
    broker_ports=("$broker_port" $((broker_port - 2)) "$ha_port")
    proxy_mode=local
    broker_conf_json="
  \"brokerConfigPath\": \"$local_conf\","
fi
for p in "$grpc_port" "$remoting_port" ${broker_ports[@]+"${broker_ports[@]}"}; do
    port_busy "$p" && die "port $p is already in use"
done
mkdir -p "$dir/logs"

# rocketMQClusterName is the cluster whose brokers the proxy routes to. localServeAddr is what the
# proxy reports as its own address. Metrics export stays off (the Prometheus exporter would open a
# listener on every interface).
cat >"$dir/rmq-proxy.json" <<EOF2
{
  "rocketMQClusterName": "$cluster",
  "proxyMode": "$proxy_mode",$broker_conf_json
  "namesrvAddr": "$namesrv",
  "grpcServerPort": $grpc_port,
  "remotingListenPort": $remoting_port,
  "localServeAddr": "127.0.0.1",
  "metricsExporterType": "DISABLE"
}
EOF2
if [ -n "$conf_extra" ]; then
    python3 - "$dir/rmq-proxy.json" "$conf_extra" <<'PY'
import json, sys
with open(sys.argv[1]) as f:
    conf = json.load(f)
with open(sys.argv[2]) as f:
    conf.update(json.load(f))
with open(sys.argv[1], "w") as f:
    json.dump(conf, f, indent=2)
PY
fi

mkdir -p "$here/target"
if command -v flock >/dev/null 2>&1; then
    (
        flock 9
        build
    ) 9>"$here/target/.build.lock"
else
    build
fi
classpath="$here/target/classes:$(cat "$cp_file")"

# user.home and the proxy home are DIR, so nothing lands in the real home directory.
# shellcheck disable=SC2086
RMQ_PROXY_HOME="$dir" nohup java -server -Xms"$heap" -Xmx"$heap" -XX:+UseG1GC \
    -XX:-OmitStackTraceInFastThrow \
    -Duser.home="$dir" -Drocketmq.home.dir="$dir" \
    -Drmq.logback.configurationFile=proxy-logback.xml \
    -Drocketmq.proxy.log.file="$dir/logs/proxy.log" ${PROXY_JAVA_OPTS:-} \
    -cp "$classpath" "$MAIN" "$dir/rmq-proxy.json" 127.0.0.1 \
    </dev/null >>"$dir/logs/proxy.out" 2>&1 &
pid=$!
echo "$pid" >"$dir/proxy.pid"
if ! wait_port "$grpc_port" "$pid" || ! wait_port "$remoting_port" "$pid" ||
    { [ -n "$local_conf" ] && ! wait_port "$broker_port" "$pid"; }; then
    show_logs
    stop_proxy
    die "proxy did not come up on 127.0.0.1:$grpc_port / 127.0.0.1:$remoting_port${local_conf:+ / broker 127.0.0.1:$broker_port}"
fi

# Every listening socket of the process must be on a loopback address (Java reports an IPv4
# socket as IPv4-mapped IPv6, [::ffff:127.0.0.1]).
if command -v ss >/dev/null 2>&1; then
    listeners="$(ss -Hltnp 2>/dev/null | grep "pid=$pid," | awk '{ print $4 }' || true)"
    if [ -n "$listeners" ]; then
        bad="$(printf '%s\n' "$listeners" | grep -v -E '^(127\.[0-9.]+|\[::ffff:127\.[0-9.]+\]|\[::1\]):[0-9]+$' || true)"
        if [ -n "$bad" ]; then
            stop_proxy
            die "proxy listens on non-loopback addresses: $(echo $bad)"
        fi
    fi
fi
echo "proxy: pid $pid ($proxy_mode mode), name server $namesrv" >&2
if [ -n "$local_conf" ]; then
    echo "grpc=127.0.0.1:$grpc_port remoting=127.0.0.1:$remoting_port broker=127.0.0.1:$broker_port"
else
    echo "grpc=127.0.0.1:$grpc_port remoting=127.0.0.1:$remoting_port"
fi
