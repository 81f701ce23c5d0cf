#!/usr/bin/env bash
# Runs the disk-full scenario end to end against the reference Apache RocketMQ 5.3.3 broker on a
# small tmpfs: mounts a tmpfs of SIZE, starts the name server and broker (rocketmq-server.sh) with
# the store on it, fills it with a ballast file to --ballast-to percent, waits for the broker's
# first disk-space check, runs `disk-full --phase fill`, starts `disk-full --phase resume` and,
# once the broker has refused it, deletes the ballast, so the resume phase sees the broker accept
# sends again by itself. Stops the servers and unmounts the tmpfs at the end, also on failure.
#
#   sudo bash interop/java-client/disk-full-apache.sh [--size 300m] [--ballast-to 78] [--dir DIR]
#        [--keep] [--broker-conf-extra FILE] [-- EXTRA RUN.SH OPTIONS]
#
# Needs root (mount -t tmpfs), a JDK 17+ and Maven. stdout: the PASS/FAIL lines of both phases, the
# disk lines of `mqadmin brokerStatus` on the full disk, and the broker's disk-full log lines. Exit
# status 0 only if both phases passed. --dir DIR (must not exist; default a new temporary
# directory, removed at the end unless --keep) holds the server directory, the state file, each
# phase's stderr and the request codes; the tmpfs is mounted at DIR/store-fs.
#
# Broker settings (unless --broker-conf-extra replaces them):
#   mappedFileSizeCommitLog=16777216   several commit-log files fit on the small disk
#   cleanResourceInterval=1000         the broker checks the disk every second instead of every 10 s
#   cleanFileForciblyEnable=false      no forced deletion of unconsumed commit-log files above 85 %
# With the 5.3.3 defaults the check runs every 10 s (after a first delay of 60 s), and a producer
# writing faster than (10 % of the disk) / 10 s fills the disk before the broker refuses anything;
# forced cleaning then deletes acknowledged, unconsumed messages. See README.md ("disk-full").
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
size=300m
ballast_to=78
dir=""
keep=false
conf_extra=""
extra=()
while [ "$#" -gt 0 ]; do
    case "$1" in
        --size) size="${2:?}"; shift 2 ;;
        --ballast-to) ballast_to="${2:?}"; shift 2 ;;
        --dir) dir="${2:?}"; shift 2 ;;
        --keep) keep=true; shift ;;
        --broker-conf-extra) conf_extra="${2:?}"; shift 2 ;;
        --) shift; extra=("$@"); break ;;
        *) echo "disk-full-apache: unknown option $1" >&2; exit 2 ;;
    esac
done
[ "$(id -u)" = 0 ] || { echo "disk-full-apache: needs root (mount -t tmpfs)" >&2; exit 2; }
case "$ballast_to" in
    '' | *[!0-9]*) echo "disk-full-apache: --ballast-to must be a percentage" >&2; exit 2 ;;
esac
# The first check is recognised by its "reclaim space" log line, written only above 75 %.
[ "$ballast_to" -gt 75 ] && [ "$ballast_to" -lt 89 ] ||
    { echo "disk-full-apache: --ballast-to must be between 76 and 88" >&2; exit 2; }

if [ -z "$dir" ]; then
    dir="$(mktemp -d "${TMPDIR:-/tmp}/silo-disk-full.XXXXXX")"
else
    [ ! -e "$dir" ] || { echo "disk-full-apache: $dir already exists" >&2; exit 2; }
    mkdir -p "$dir"
fi
dir="$(cd "$dir" && pwd)"
fs="$dir/store-fs"
srv="$dir/servers"
state="$dir/disk-full.state"
mkdir -p "$fs"
if [ -z "$conf_extra" ]; then
    conf_extra="$dir/broker-extra.conf"
    printf 'mappedFileSizeCommitLog=16777216\ncleanResourceInterval=1000\ncleanFileForciblyEnable=false\n' \
        >"$conf_extra"
fi

mounted=false
resume_pid=""
cleanup() {
    if [ -n "$resume_pid" ]; then
        kill "$resume_pid" 2>/dev/null || true
        wait "$resume_pid" 2>/dev/null || true
    fi
    bash "$here/rocketmq-server.sh" stop "$srv" >&2 || true
    if [ "$mounted" = true ]; then
        umount "$fs" || echo "disk-full-apache: could not unmount $fs" >&2
    fi
    if [ "$keep" = false ]; then
        rm -rf "$dir"
    else
        echo "disk-full-apache: kept $dir" >&2
    fi
}
trap cleanup EXIT

busy() { # PORT
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
    command -v ss >/dev/null 2>&1 && ss -Hltn "sport = :$1" 2>/dev/null | grep -q . && return 0
    return 1
}
# Below the usual ephemeral range (32768-60999), so no client socket holds a port meanwhile.
tries=0
while :; do
    tries=$((tries + 1))
    [ "$tries" -le 200 ] || { echo "disk-full-apache: no free ports found" >&2; exit 1; }
    namesrv_port=$((20000 + RANDOM % 12000))
    broker_port=$((namesrv_port + 100))
    busy "$namesrv_port" || busy "$broker_port" || busy $((broker_port - 2)) || busy $((broker_port + 1)) || break
done
namesrv="127.0.0.1:$namesrv_port"

mount -t tmpfs -o "size=$size" tmpfs "$fs"
mounted=true
bash "$here/rocketmq-server.sh" start "$srv" --namesrv-port "$namesrv_port" --broker-port "$broker_port" \
    --store-dir "$fs/store" --broker-conf-extra "$conf_extra" >&2
read -r total used <<<"$(df -B1 --output=size,used "$fs" | tail -1)"
ballast=$((total * ballast_to / 100 - used))
[ "$ballast" -gt 0 ] || { echo "disk-full-apache: the store already uses more than $ballast_to %" >&2; exit 1; }
fallocate -l "$ballast" "$fs/ballast"
echo "tmpfs $size: $(df -h --output=used,avail,pcent "$fs" | tail -1 | tr -s ' ') with a ballast of $ballast bytes"

# The broker checks the disk first 60 s after its store started; a fill started earlier could run
# the disk full before any check.
deadline=$((SECONDS + 150))
until grep -q 'reclaim space' "$srv/logs/broker.log"; do
    [ "$SECONDS" -lt "$deadline" ] || { echo "disk-full-apache: no disk check logged within 150 s" >&2; exit 1; }
    sleep 1
done

rc=0
bash "$here/run.sh" disk-full --namesrv "$namesrv" --phase fill --state "$state" --count 100000 --timeout 300 \
    --codes-file "$dir/codes.txt" "${extra[@]}" 2>"$dir/fill.err" || rc=1
grep '^disk-full:' "$dir/fill.err" || true
echo "on the full disk: $(df -h --output=used,avail,pcent "$fs" | tail -1 | tr -s ' ')"
bash "$here/mqadmin.sh" brokerStatus -n "$namesrv" -b "127.0.0.1:$broker_port" 2>/dev/null |
    grep -E '^(commitLogDirCapacity|commitLogDiskRatio|consumeQueueDiskRatio|commitLogMinOffset|commitLogMaxOffset)' ||
    true
[ "$rc" = 0 ] || exit 1

bash "$here/run.sh" disk-full --namesrv "$namesrv" --phase resume --state "$state" --timeout 120 \
    --codes-file "$dir/codes.txt" "${extra[@]}" 2>"$dir/resume.err" &
resume_pid=$!
# Free the space only once the resume phase has seen a refusal.
deadline=$((SECONDS + 120))
until grep -q "^refused$(printf '\t')resume" "$state"; do
    if ! kill -0 "$resume_pid" 2>/dev/null || [ "$SECONDS" -ge "$deadline" ]; then
        break
    fi
    sleep 0.2
done
rm -f "$fs/ballast"
echo "ballast deleted: $(df -h --output=used,avail,pcent "$fs" | tail -1 | tr -s ' ')"
wait "$resume_pid" || rc=1
resume_pid=""
grep '^disk-full:' "$dir/resume.err" || true
grep -E 'mark disk|putMessage is forbidden|disk space OK' "$srv/logs/broker.log" || true
exit "$rc"
