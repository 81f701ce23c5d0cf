#!/usr/bin/env bash
# Starts or stops the reference Apache RocketMQ 5.3.3 name server and broker (unmodified jars from
# Maven Central, see server/pom.xml), both on 127.0.0.1 only, with every file they write under DIR.
#
#   bash interop/java-client/rocketmq-server.sh start DIR --namesrv-port P --broker-port Q [options]
#   bash interop/java-client/rocketmq-server.sh stop  DIR [--broker-only]
#   bash interop/java-client/rocketmq-server.sh status DIR
#
# start: starts whichever of the two is not already running from DIR (so `stop DIR --broker-only`
# followed by `start DIR ...` restarts just the broker, keeping its store), then waits until the
# broker is registered with the name server, the name server routes TBW102 (needed for sends to
# topics that do not exist yet) and the broker answers requests. Ports, --flush, --store-dir and
# --broker-conf-extra given once are remembered in DIR/ports, so a restart may omit them (a broker
# restarted without its mappedFileSizeCommitLog line refuses to load the commit log). The broker occupies Q
# (clients) and Q-2 (its "fast" port, always opened by the Apache broker); Q+1 is its HA
# (replication) port. All three must be free.
# Options:
#   --timeout SECONDS      bound on each wait (default 120)
#   --broker-heap SIZE     broker -Xms/-Xmx (default 512m)
#   --namesrv-heap SIZE    name server -Xms/-Xmx (default -Xms128m -Xmx256m)
#   --flush async|sync     the broker's flushDiskType, ASYNC_FLUSH or SYNC_FLUSH (default async)
#   --store-dir DIR2       the broker's storePathRootDir (default DIR/store)
#   --broker-conf-extra F  append the key=value lines of file F to the generated broker.conf (a
#                          later line wins: brokerId=1 and brokerRole=SLAVE make the broker a slave)
#   --namesrv-addr H:P     register with this name server (Silo's, say) instead of starting one;
#                          --namesrv-port is then not needed, and stop leaves that name server alone
# Environment: NAMESRV_JAVA_OPTS and BROKER_JAVA_OPTS are appended to the JVM options.
#
# stop: SIGTERM (the Apache shutdown hooks unregister the broker and flush the store), SIGKILL after
# 60 s. With --broker-only the name server keeps running.
#
# Files in DIR: namesrv.conf, broker.conf, namesrv.pid, broker.pid, ports, logs/{namesrv,broker}.log
# (the servers' own logging), logs/{namesrv,broker}.out (their stdout/stderr), store/ (the broker's
# store unless --store-dir: commitlog, consumequeue, index, config/*.json), namesrv/ (kvConfig.json).
#
# Needs a JDK 17+ and Maven (the first run downloads the jars). Exit status: 0 ok, 1 failure,
# 2 usage error.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
server_dir="$here/server"
cp_file="$server_dir/target/server-classpath.txt"

usage() {
    awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}" >&2
    exit 2
}

die() {
    echo "rocketmq-server: $*" >&2
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

namesrv_port=""
broker_port=""
timeout=120
broker_heap="512m"
namesrv_heap=""
flush=""
store_dir=""
broker_only=false
conf_extra=""
external_namesrv=""
while [ "$#" -gt 0 ]; do
    case "$1" in
        --namesrv-port) namesrv_port="${2:?}"; shift 2 ;;
        --broker-port) broker_port="${2:?}"; shift 2 ;;
        --timeout) timeout="${2:?}"; shift 2 ;;
        --broker-heap) broker_heap="${2:?}"; shift 2 ;;
        --namesrv-heap) namesrv_heap="${2:?}"; shift 2 ;;
        --flush) flush="${2:?}"; shift 2 ;;
        --store-dir) store_dir="${2:?}"; shift 2 ;;
        --broker-conf-extra) conf_extra="${2:?}"; shift 2 ;;
        --namesrv-addr) external_namesrv="${2:?}"; shift 2 ;;
        --broker-only) broker_only=true; shift ;;
        *) echo "rocketmq-server: unknown option $1" >&2; usage ;;
    esac
done

# Process helpers. A pid file is trusted only while that pid still runs the expected main class, so
# a recycled pid is never signalled.
pid_of() { # NAME MAIN_CLASS -> prints the live pid or nothing
    local f="$dir/$1.pid" pid
    [ -f "$f" ] || return 0
    pid="$(cat "$f")"
    if [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q "$2"; then
        echo "$pid"
    fi
}

NAMESRV_MAIN=org.apache.rocketmq.namesrv.NamesrvStartup
BROKER_MAIN=org.apache.rocketmq.broker.BrokerStartup

stop_one() { # NAME MAIN_CLASS
    local pid deadline
    pid="$(pid_of "$1" "$2")"
    if [ -z "$pid" ]; then
        rm -f "$dir/$1.pid"
        return 0
    fi
    kill -TERM "$pid" 2>/dev/null || true
    deadline=$((SECONDS + 60))
    while kill -0 "$pid" 2>/dev/null && [ "$SECONDS" -lt "$deadline" ]; do
        sleep 0.2
    done
    if kill -0 "$pid" 2>/dev/null; then
        echo "rocketmq-server: $1 (pid $pid) did not stop in 60 s; killing it" >&2
        kill -KILL "$pid" 2>/dev/null || true
        while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
    fi
    rm -f "$dir/$1.pid"
    echo "rocketmq-server: stopped $1 (pid $pid)" >&2
}

port_busy() { # PORT: true if something accepts connections on 127.0.0.1:PORT or listens on it
    if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then
        return 0
    fi
    if command -v ss >/dev/null 2>&1 && ss -Hltn "sport = :$1" 2>/dev/null | grep -q .; then
        return 0
    fi
    return 1
}

wait_port() { # PORT PID NAME
    local deadline=$((SECONDS + timeout))
    while ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; do
        kill -0 "$2" 2>/dev/null || return 1
        [ "$SECONDS" -lt "$deadline" ] || return 1
        sleep 0.1
    done
}

show_logs() {
    local f
    for f in "$dir"/logs/*.out "$dir"/logs/*.log; do
        [ -f "$f" ] || continue
        echo "---- last lines of $f" >&2
        tail -n 25 "$f" >&2
    done
}

# shellcheck source=../java-up-to-date.sh
. "$here/../java-up-to-date.sh"
build() {
    java_build_up_to_date "$server_dir/target/.built" "$cp_file" "$server_dir/pom.xml" "$server_dir/src" && return 0
    # One Maven run: compile the two helpers, then write the runtime classpath to a file.
    mvn -q -B -f "$server_dir/pom.xml" compile dependency:build-classpath \
        -Dmdep.outputFile="$cp_file" -Dmdep.includeScope=runtime 1>&2
    touch "$server_dir/target/.built"
}

case "$cmd" in
    stop)
        [ -d "$dir" ] || exit 0
        stop_one broker "$BROKER_MAIN"
        if [ "$broker_only" = false ]; then
            stop_one namesrv "$NAMESRV_MAIN"
        fi
        exit 0
        ;;
    status)
        n="$(pid_of namesrv "$NAMESRV_MAIN")"
        b="$(pid_of broker "$BROKER_MAIN")"
        echo "namesrv: ${n:-stopped}"
        echo "broker: ${b:-stopped}"
        [ -n "$n" ] && [ -n "$b" ]
        exit $?
        ;;
    start) ;;
    *) usage ;;
esac

if [ -f "$dir/ports" ]; then
    # shellcheck disable=SC1091
    . "$dir/ports"
    namesrv_port="${namesrv_port:-$saved_namesrv_port}"
    broker_port="${broker_port:-$saved_broker_port}"
    flush="${flush:-${saved_flush:-}}"
    store_dir="${store_dir:-${saved_store_dir:-}}"
    conf_extra="${conf_extra:-${saved_conf_extra:-}}"
    external_namesrv="${external_namesrv:-${saved_external_namesrv:-}}"
fi
if [ -n "$external_namesrv" ]; then
    namesrv_port="${external_namesrv##*:}"
fi
[ -n "$namesrv_port" ] && [ -n "$broker_port" ] || die "start needs --namesrv-port and --broker-port"
flush="${flush:-async}"
case "$flush" in
    async) flush_disk_type=ASYNC_FLUSH ;;
    sync) flush_disk_type=SYNC_FLUSH ;;
    *) echo "rocketmq-server: --flush must be async or sync" >&2; usage ;;
esac
store_dir="${store_dir:-$dir/store}"
case "$store_dir" in
    /*) ;;
    *) store_dir="$PWD/$store_dir" ;;
esac
if [ -n "$namesrv_heap" ]; then
    namesrv_heap_opts=(-Xms"$namesrv_heap" -Xmx"$namesrv_heap")
else
    namesrv_heap_opts=(-Xms128m -Xmx256m)
fi
mkdir -p "$dir/logs" "$store_dir" "$dir/namesrv"
case "$conf_extra" in
    "" | /*) ;;
    *) conf_extra="$PWD/$conf_extra" ;;
esac
printf 'saved_namesrv_port=%s\nsaved_broker_port=%s\nsaved_flush=%s\nsaved_store_dir=%q\nsaved_conf_extra=%q\nsaved_external_namesrv=%q\n' \
    "$namesrv_port" "$broker_port" "$flush" "$store_dir" "$conf_extra" "$external_namesrv" >"$dir/ports"
namesrv_addr="${external_namesrv:-127.0.0.1:$namesrv_port}"
broker_addr="127.0.0.1:$broker_port"

mkdir -p "$server_dir/target"
if command -v flock >/dev/null 2>&1; then
    # Several test runs may start servers at once; they must not compile into target/ concurrently.
    (
        flock 9
        build
    ) 9>"$server_dir/target/.build.lock"
else
    build
fi
classpath="$server_dir/target/classes:$(cat "$cp_file")"

# Common JVM options: the servers' logging goes to DIR/logs (server-logback.xml), and user.home is
# DIR so that nothing lands in the real home directory.
common_opts=(
    -Duser.home="$dir"
    -Drocketmq.home.dir="$dir"
    -Drmq.logback.configurationFile=server-logback.xml
    -XX:-OmitStackTraceInFastThrow
)

started_namesrv=false
namesrv_pid="$(pid_of namesrv "$NAMESRV_MAIN")"
if [ -z "$namesrv_pid" ] && [ -z "$external_namesrv" ]; then
    started_namesrv=true
    port_busy "$namesrv_port" && die "port $namesrv_port is already in use"
    cat >"$dir/namesrv.conf" <<EOF
# Generated by rocketmq-server.sh
listenPort=$namesrv_port
bindAddress=127.0.0.1
rocketmqHome=$dir
kvConfigPath=$dir/namesrv/kvConfig.json
EOF
    # shellcheck disable=SC2086
    nohup java -server "${namesrv_heap_opts[@]}" -XX:+UseSerialGC "${common_opts[@]}" \
        -Drocketmq.server.log.file="$dir/logs/namesrv.log" ${NAMESRV_JAVA_OPTS:-} \
        -cp "$classpath" "$NAMESRV_MAIN" -c "$dir/namesrv.conf" \
        </dev/null >>"$dir/logs/namesrv.out" 2>&1 &
    namesrv_pid=$!
    echo "$namesrv_pid" >"$dir/namesrv.pid"
    if ! wait_port "$namesrv_port" "$namesrv_pid"; then
        show_logs
        stop_one namesrv "$NAMESRV_MAIN"
        die "name server did not come up on $namesrv_addr"
    fi
    echo "rocketmq-server: name server pid $namesrv_pid on $namesrv_addr" >&2
fi

broker_pid="$(pid_of broker "$BROKER_MAIN")"
if [ -z "$broker_pid" ]; then
    for p in "$broker_port" $((broker_port - 2)) $((broker_port + 1)); do
        port_busy "$p" && die "port $p (needed by the broker on $broker_port) is already in use"
    done
    cat >"$dir/broker.conf" <<EOF
# Generated by rocketmq-server.sh
brokerClusterName=DefaultCluster
brokerName=broker-a
brokerId=0
brokerRole=ASYNC_MASTER
flushDiskType=$flush_disk_type
namesrvAddr=$namesrv_addr
# Advertised to clients (brokerIP1) and as the HA address (brokerIP2); bindAddress keeps the
# client ports (listenPort and listenPort-2) on loopback, and LoopbackHAService does the same for
# the HA port, which the stock broker would bind on every interface.
brokerIP1=127.0.0.1
brokerIP2=127.0.0.1
bindAddress=127.0.0.1
listenPort=$broker_port
haListenPort=$((broker_port + 1))
rocketmqHome=$dir
storePathRootDir=$store_dir
autoCreateTopicEnable=true
autoCreateSubscriptionGroup=true
EOF
    if [ -n "$conf_extra" ]; then
        cat "$conf_extra" >>"$dir/broker.conf"
    fi
    # shellcheck disable=SC2086
    nohup java -server -Xms"$broker_heap" -Xmx"$broker_heap" -XX:+UseG1GC \
        -XX:SoftRefLRUPolicyMSPerMB=0 -XX:MaxDirectMemorySize=512m -XX:-UseLargePages \
        "${common_opts[@]}" -Drocketmq.server.log.file="$dir/logs/broker.log" ${BROKER_JAVA_OPTS:-} \
        -cp "$classpath" "$BROKER_MAIN" -c "$dir/broker.conf" \
        </dev/null >>"$dir/logs/broker.out" 2>&1 &
    broker_pid=$!
    echo "$broker_pid" >"$dir/broker.pid"
    # The id the broker registers with: the last brokerId line (a slave's is above 0).
    broker_id="$(sed -n 's/^[[:space:]]*brokerId[[:space:]]*=[[:space:]]*//p' "$dir/broker.conf" | tail -n 1)"
    # With authentication on, the probe signs as the broker's initial user.
    init_user="$(sed -n 's/^[[:space:]]*initAuthenticationUser[[:space:]]*=[[:space:]]*//p' "$dir/broker.conf" | tail -n 1)"
    probe_auth=()
    if [ -n "$init_user" ]; then
        probe_auth=(-Dawait.accessKey="$(printf '%s' "$init_user" | sed -n 's/.*"username"[[:space:]]*:[[:space:]]*"\([^"]*\)".*/\1/p')"
            -Dawait.secretKey="$(printf '%s' "$init_user" | sed -n 's/.*"password"[[:space:]]*:[[:space:]]*"\([^"]*\)".*/\1/p')")
    fi
    if ! java -Xmx64m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 "${probe_auth[@]}" -cp "$classpath" \
        dev.silo.interop.server.AwaitBroker "$namesrv_addr" "$broker_addr" "$timeout" "${broker_id:-0}"; then
        show_logs
        stop_one broker "$BROKER_MAIN"
        [ "$started_namesrv" = false ] || stop_one namesrv "$NAMESRV_MAIN"
        die "broker did not become ready on $broker_addr"
    fi
    echo "rocketmq-server: broker pid $broker_pid on $broker_addr, registered with $namesrv_addr" >&2
fi
echo "namesrv=$namesrv_addr broker=$broker_addr"
