"""Interop scenarios for the C++ RocketMQ client (librocketmq.so from PyPI's `rocketmq` 0.4.4).

    python scenarios.py SCENARIO --namesrv HOST:PORT [--count N] [--timeout S] [--settle-ms MS]
                        [--suffix S] [--capture FILE]
    python scenarios.py proxy --namesrv HOST:PORT --capture FILE [--timeout S]

Scenarios: produce, push-concurrent, push-orderly, pull (see README.md). stdout is only the verdict:
`PASS <scenario> <details>` (exit 0) or `FAIL <scenario>: ...` with the first 20 differences
(exit 1); exit 2 is a usage error. --capture FILE puts a recording proxy between the client and
the servers: every remoting frame becomes one JSON line in FILE, and a summary of the request codes
(with the response codes seen) goes to stderr. `proxy` runs only the recording proxy (for any
other client), prints its name-server address on stdout and stops after --timeout seconds (or
SIGINT/SIGTERM).

Run through run.sh, which also points HOME at a scratch directory (the C++ client writes its log
to $HOME/logs/rocketmq-cpp/).
"""

import argparse
import collections
import ctypes
import json
import os
import random
import re
import signal
import socket
import string
import struct
import sys
import threading
import time

SCENARIOS = ("produce", "push-concurrent", "push-orderly", "pull")
PROP = "silo-prop"
TAGS = ("TagA", "TagB", "TagC")
ORDERS = 8

# Request codes seen with this client (names as in RocketMQ's RequestCode).
CODE_NAMES = {
    10: "SEND_MESSAGE", 11: "PULL_MESSAGE", 14: "QUERY_CONSUMER_OFFSET",
    15: "UPDATE_CONSUMER_OFFSET", 29: "SEARCH_OFFSET_BY_TIMESTAMP", 30: "GET_MAX_OFFSET",
    31: "GET_MIN_OFFSET", 34: "HEART_BEAT", 35: "UNREGISTER_CLIENT",
    36: "CONSUMER_SEND_MSG_BACK", 38: "GET_CONSUMER_LIST_BY_GROUP",
    40: "NOTIFY_CONSUMER_IDS_CHANGED", 41: "LOCK_BATCH_MQ", 42: "UNLOCK_BATCH_MQ",
    105: "GET_ROUTEINFO_BY_TOPIC", 310: "SEND_MESSAGE_V2", 320: "SEND_BATCH_MESSAGE",
}


def now():
    return time.monotonic()


def wait_until(cond, timeout, step=0.05):
    """Polls cond() until it is true or timeout seconds pass; returns its last value."""
    deadline = now() + timeout
    while True:
        value = cond()
        if value or now() >= deadline:
            return value
        time.sleep(step)


# ---------------------------------------------------------------------------------------------
# Recording proxy

def read_exact(sock, n):
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return bytes(buf)


def decode_binary_header(h):
    """The ROCKETMQ (binary) header serialization, as a dict shaped like the JSON one."""
    code, lang, version, opaque, flag, rlen = struct.unpack_from(">hBhiiI", h, 0)
    pos = 17
    remark = h[pos:pos + rlen].decode("utf-8", "replace")
    pos += rlen
    (elen,) = struct.unpack_from(">I", h, pos)
    pos += 4
    end = pos + elen
    ext = {}
    while pos < end:
        (klen,) = struct.unpack_from(">H", h, pos)
        key = h[pos + 2:pos + 2 + klen].decode("utf-8", "replace")
        pos += 2 + klen
        (vlen,) = struct.unpack_from(">I", h, pos)
        ext[key] = h[pos + 4:pos + 4 + vlen].decode("utf-8", "replace")
        pos += 4 + vlen
    return {"code": code, "language": lang, "version": version, "opaque": opaque, "flag": flag,
            "remark": remark, "extFields": ext}


def json_type(v):
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, (int, float)):
        return "number"
    if v is None:
        return "null"
    return {str: "string", list: "array", dict: "object"}[type(v)]


class WireLog:
    """A loopback proxy for the name server and, through rewritten routes, every broker."""

    ADDR = re.compile(rb'"(127\.\d{1,3}\.\d{1,3}\.\d{1,3}):(\d{1,5})"')

    def __init__(self, namesrv, path):
        self.out = open(path, "w")
        self.lock = threading.Lock()
        self.t0 = now()
        self.conns = 0
        self.brokers = {}  # upstream "host:port" -> local "127.0.0.1:port"
        # (peer kind, direction, request code) -> [requests, response codes]
        self.codes = collections.OrderedDict()
        self.loose = collections.OrderedDict()  # (code, field) -> JSON type, for extFields
        self.namesrv = self._listen("namesrv", namesrv)

    def _listen(self, peer, upstream):
        host, port = upstream.rsplit(":", 1)
        srv = socket.socket()
        srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        srv.bind(("127.0.0.1", 0))
        srv.listen(64)
        local = "127.0.0.1:%d" % srv.getsockname()[1]

        def accept():
            while True:
                client, _ = srv.accept()
                try:
                    server = socket.create_connection((host, int(port)), timeout=10)
                    server.settimeout(None)
                except OSError:
                    client.close()
                    continue
                with self.lock:
                    self.conns += 1
                    conn = self.conns
                state = {"from_client": {}, "from_server": {}}
                label = peer if peer == "namesrv" else "broker@" + upstream
                for src, dst, d in ((client, server, "c>s"), (server, client, "s>c")):
                    threading.Thread(target=self._pump, args=(src, dst, d, label, conn, state),
                                     daemon=True).start()

        threading.Thread(target=accept, daemon=True).start()
        return local

    def broker_local(self, upstream):
        with self.lock:
            if upstream in self.brokers:
                return self.brokers[upstream]
        local = self._listen("broker", upstream)
        with self.lock:
            return self.brokers.setdefault(upstream, local)

    def _pump(self, src, dst, direction, peer, conn, state):
        try:
            while True:
                head = read_exact(src, 4)
                if head is None:
                    break
                (length,) = struct.unpack(">I", head)
                rest = read_exact(src, length)
                if rest is None:
                    break
                frame = self._record(head + rest, direction, peer, conn, state)
                dst.sendall(frame)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                s.close()

    def _record(self, frame, direction, peer, conn, state):
        (raw,) = struct.unpack_from(">I", frame, 4)
        stype, hlen = raw >> 24, raw & 0xFFFFFF
        header_bytes = frame[8:8 + hlen]
        body = frame[8 + hlen:]
        if stype == 0:
            header_text = header_bytes.decode("utf-8", "replace")
            header = json.loads(header_text)
        else:
            header_text = None
            header = decode_binary_header(header_bytes)
        code, opaque, flag = header.get("code"), header.get("opaque"), header.get("flag", 0)
        is_response = bool(flag & 1)
        mine = state["from_client" if direction == "c>s" else "from_server"]
        theirs = state["from_server" if direction == "c>s" else "from_client"]
        rec = {"t": round(now() - self.t0, 3), "peer": peer, "conn": conn, "dir": direction,
               "kind": "response" if is_response else ("oneway" if flag & 2 else "request"),
               "code": code, "opaque": opaque,
               "serialize": "JSON" if stype == 0 else "ROCKETMQ"}
        kind = "namesrv" if peer == "namesrv" else "broker"
        if is_response:
            req = theirs.pop(opaque, None)
            rec["request"] = req
            if req is not None:
                key = (kind, "c>s" if direction == "s>c" else "s>c", req)
                with self.lock:
                    self.codes.setdefault(key, [0, set()])[1].add(code)
            if kind == "namesrv" and req == 105 and code == 0 and body:
                body = self.ADDR.sub(lambda m: b'"%s"' % self.broker_local(
                    "%s:%s" % (m.group(1).decode(), m.group(2).decode())).encode(), body)
                rec["routeRewritten"] = True
        else:
            if not flag & 2:
                mine[opaque] = code
            with self.lock:
                self.codes.setdefault((kind, direction, code), [0, set()])[0] += 1
                if direction == "c>s":
                    for k, v in (header.get("extFields") or {}).items():
                        if not isinstance(v, str):
                            self.loose.setdefault((code, k), json_type(v))
        rec["header"] = header_text if header_text is not None else header
        rec["bodyLen"] = len(body)
        if body[:1] in (b"{", b"["):
            rec["body"] = body.decode("utf-8", "replace")
        with self.lock:
            self.out.write(json.dumps(rec) + "\n")
            self.out.flush()
        if rec.get("routeRewritten"):
            frame = struct.pack(">II", 4 + hlen + len(body), raw) + header_bytes + body
        return frame

    def summary(self):
        with self.lock:
            lines = []
            for (kind, d, code), (n, resp) in self.codes.items():
                who = kind if d == "c>s" else kind + "->client"
                rs = ",".join(str(c) for c in sorted(resp)) or "-"
                lines.append("%s: %s %s[%s] x%d" % (who, code, CODE_NAMES.get(code, "?"), rs, n))
            for (code, field), t in self.loose.items():
                lines.append("extFields not a string: %s %s.%s is a JSON %s"
                             % (code, CODE_NAMES.get(code, "?"), field, t))
            return lines


# ---------------------------------------------------------------------------------------------
# Scenarios

class Ctx:
    def __init__(self, args):
        self.scenario = args.scenario
        self.namesrv = args.namesrv
        self.count = args.count
        self.timeout = args.timeout
        self.settle = args.settle_ms / 1000.0
        self.suffix = args.suffix or (base36(int(time.time() * 1000))
                                      + "".join(random.choice(string.ascii_lowercase + string.digits)
                                                for _ in range(3)))
        self.fails = []
        self.notes = []

    def name(self, kind):
        return "silo_cpp_%s_%s_%s" % (self.scenario.replace("-", "_"), kind, self.suffix)

    def fail(self, what, expected, actual):
        self.fails.append("%s: expected %s, actual %s" % (what, expected, actual))

    def check(self, what, expected, actual):
        if expected != actual:
            self.fail(what, short(expected), short(actual))


def base36(n):
    digits = string.digits + string.ascii_lowercase
    out = ""
    while n:
        n, r = divmod(n, 36)
        out = digits[r] + out
    return out or "0"


def short(v):
    s = repr(v)
    return s if len(s) <= 120 else s[:100] + "...(%d chars)" % len(s)


def make_messages(ctx, topic):
    """N distinct messages. Bodies are bytes 0x01-0xFF (not UTF-8, no NUL: the C API's body
    getter is a C string); every tenth is 6000 bytes, above the client's 4 KiB compression
    threshold, so compressed bodies (sysFlag COMPRESSED) go through the broker too."""
    msgs = []
    for i in range(ctx.count):
        head = ("cpp-%s-%d:" % (ctx.suffix, i)).encode()
        size = 6000 if i % 10 == 7 else 40 + i % 50
        body = head + bytes((i * 7 + j) % 255 + 1 for j in range(size))
        msgs.append({"i": i, "topic": topic, "key": "key-%s-%d" % (ctx.suffix, i),
                     "tag": TAGS[i % len(TAGS)], "prop": "p-%d-%s" % (i, ctx.suffix),
                     "body": body})
    return msgs


def new_producer(ctx):
    from rocketmq.client import Producer
    p = Producer(ctx.name("pg"), timeout=int(ctx.timeout * 1000))
    p.set_namesrv_addr(ctx.namesrv)
    p.start()
    return p


def to_message(m):
    from rocketmq.client import Message
    msg = Message(m["topic"])
    msg.set_keys(m["key"])
    msg.set_tags(m["tag"])
    msg.set_property(PROP, m["prop"])
    msg.set_body(m["body"])
    return msg


def send_all(ctx, msgs, orderly=False):
    """Sync sends; records msgId and queue offset per message. Returns the producer."""
    from rocketmq.client import SendStatus
    producer = new_producer(ctx)
    for m in msgs:
        msg = to_message(m)
        try:
            if orderly:
                r = producer.send_orderly(msg, m["order"])
            else:
                r = producer.send_sync(msg)
        except Exception as e:  # the binding raises on a failed send
            ctx.fail("send %d" % m["i"], "SendStatus.OK", "%s: %s" % (type(e).__name__, e))
            continue
        if r.status != SendStatus.OK:
            ctx.fail("send %d status" % m["i"], "SendStatus.OK", r.status)
        if not re.fullmatch(r"[0-9A-F]{32}", r.msg_id or ""):
            ctx.fail("send %d msgId" % m["i"], "32 hex digits", r.msg_id)
        m["msg_id"], m["offset"] = r.msg_id, r.offset
    return producer


def check_sends(ctx, msgs):
    sent = [m for m in msgs if "msg_id" in m]
    ids = collections.Counter(m["msg_id"] for m in sent)
    dup = [k for k, n in ids.items() if n > 1]
    if dup:
        ctx.fail("distinct msgIds", "all distinct", "%d repeated, e.g. %s" % (len(dup), dup[0]))
    # The send result has no queue id, but queue offsets over all queues must look like k queues
    # each filled from 0 with no holes: at most as many messages at offset v+1 as at offset v.
    per_offset = collections.Counter(m["offset"] for m in sent)
    top = max(per_offset) if per_offset else -1
    counts = [per_offset.get(v, 0) for v in range(top + 1)]
    if any(counts[v + 1] > counts[v] for v in range(len(counts) - 1)) or 0 in counts:
        ctx.fail("queue offsets of the sends", "each queue from 0 without holes",
                 "messages per offset %s" % counts[:12])
    return len(sent), (counts[0] if counts else 0)  # queues that got a message


class Received:
    """What a consumer saw, in arrival order, with the message fields copied out of the callback."""

    def __init__(self):
        self.lock = threading.Lock()
        self.seen = []
        self.in_flight = collections.Counter()
        self.overlap = []
        self.errors = []

    def add(self, msg, queue_guard=False):
        try:
            rec = {"id": msg.id, "topic": msg.topic, "keys": as_text(msg.keys),
                   "tags": as_text(msg.tags), "prop": as_text(msg.get_property(PROP)),
                   "body": msg.body, "queue": msg.queue_id, "offset": msg.queue_offset,
                   "reconsume": msg.reconsume_times, "thread": threading.get_ident()}
        except Exception as e:
            with self.lock:
                self.errors.append("%s: %s" % (type(e).__name__, e))
            return
        with self.lock:
            self.seen.append(rec)
            if queue_guard:
                self.in_flight[rec["queue"]] += 1
                if self.in_flight[rec["queue"]] > 1:
                    self.overlap.append(rec["queue"])
        if queue_guard:
            time.sleep(0.002)  # give an overlapping call on the same queue a chance to show
            with self.lock:
                self.in_flight[rec["queue"]] -= 1

    def distinct_keys(self):
        with self.lock:
            return len({r["keys"] for r in self.seen})

    def snapshot(self):
        with self.lock:
            return list(self.seen)


def as_text(v):
    if v is None:
        return None
    return v.decode("utf-8", "replace") if isinstance(v, bytes) else v


def check_received(ctx, msgs, seen, require_order=True):
    """Every message exactly once, every field, and per queue in increasing offset order."""
    by_key = {m["key"]: m for m in msgs}
    got = collections.defaultdict(list)
    for r in seen:
        got[r["keys"]].append(r)
    strays = [k for k in got if k not in by_key]
    if strays:
        ctx.fail("messages not sent by this run", "none", "%d, e.g. %s" % (len(strays), strays[0]))
    missing = [k for k in by_key if k not in got]
    if missing:
        ctx.fail("messages received", len(by_key), "%d (missing e.g. %s)"
                 % (len(by_key) - len(missing), missing[0]))
    repeats = 0
    for key, rs in got.items():
        m = by_key.get(key)
        if m is None:
            continue
        if len(rs) > 1:
            if any(r["reconsume"] == 0 for r in rs[1:]):
                ctx.fail("deliveries of %s" % key, 1, len(rs))
            repeats += len(rs) - 1
        r = rs[0]
        what = "message %d" % m["i"]
        ctx.check(what + " body", m["body"], r["body"])
        ctx.check(what + " topic", m["topic"], r["topic"])
        ctx.check(what + " tags", m["tag"], r["tags"])
        ctx.check(what + " property " + PROP, m["prop"], r["prop"])
        ctx.check(what + " reconsumeTimes", 0, r["reconsume"])
        if "msg_id" in m:
            ctx.check(what + " msgId", m["msg_id"], r["id"])
            ctx.check(what + " queue offset", m["offset"], r["offset"])
    # Per queue: offsets strictly increasing in arrival order, and 0..n-1 without holes.
    per_queue = collections.defaultdict(list)
    for r in seen:
        per_queue[r["queue"]].append(r["offset"])
    for q, offs in sorted(per_queue.items()):
        firsts = list(collections.OrderedDict.fromkeys(offs))
        if require_order and firsts != sorted(firsts):
            ctx.fail("queue %d arrival order" % q, "increasing offsets", firsts[:20])
        if sorted(set(offs)) != list(range(len(set(offs)))):
            ctx.fail("queue %d offsets" % q, "0..%d" % (len(set(offs)) - 1), sorted(set(offs))[:20])
    return repeats, per_queue


def consume_push(ctx, topic, msgs, orderly):
    from rocketmq.client import PushConsumer
    got = Received()
    consumer = PushConsumer(ctx.name("cg"), orderly=orderly)
    consumer.set_namesrv_addr(ctx.namesrv)
    # Concurrent: one consume thread, so arrival order per queue means something. Orderly: several,
    # so the client's per-queue lock is what keeps a queue's messages in sequence.
    consumer.set_thread_count(4 if orderly else 1)
    consumer.subscribe(topic, lambda msg: got.add(msg, queue_guard=orderly))
    t = now()
    consumer.start()
    complete = wait_until(lambda: got.distinct_keys() >= len(msgs), ctx.timeout)
    first_all = now() - t
    if complete:
        # Keep listening a little to catch duplicates and strays.
        time.sleep(ctx.settle)
    consumer.shutdown()
    if got.errors:
        ctx.fail("reading messages in the listener", "no error", got.errors[0])
    return got, first_all


def scenario_produce(ctx):
    topic = ctx.name("t")
    msgs = make_messages(ctx, topic)
    producer = send_all(ctx, msgs)
    producer.shutdown()
    sent, queues = check_sends(ctx, msgs)
    return "sent=%d ok=%d queues=%d" % (len(msgs), sent, queues)


def scenario_push(ctx, orderly):
    topic = ctx.name("t")
    msgs = make_messages(ctx, topic)
    if orderly:
        for m in msgs:
            m["order"], m["step"] = m["i"] % ORDERS, m["i"] // ORDERS
    producer = send_all(ctx, msgs, orderly=orderly)
    producer.shutdown()
    check_sends(ctx, msgs)
    got, secs = consume_push(ctx, topic, msgs, orderly)
    seen = got.snapshot()
    repeats, per_queue = check_received(ctx, msgs, seen)
    details = "received=%d repeats=%d queues=%d all-in=%.1fs" % (
        len({r["keys"] for r in seen}), repeats, len(per_queue), secs)
    if orderly:
        by_key = {m["key"]: m for m in msgs}
        order_queue = {}
        steps = collections.defaultdict(list)
        for r in seen:
            m = by_key.get(r["keys"])
            if m is None:
                continue
            steps[m["order"]].append(m["step"])
            q = order_queue.setdefault(m["order"], r["queue"])
            if q != r["queue"]:
                ctx.fail("order %d queue" % m["order"], q, r["queue"])
        for o, s in sorted(steps.items()):
            firsts = list(collections.OrderedDict.fromkeys(s))
            if firsts != sorted(firsts):
                ctx.fail("order %d steps" % o, "in sequence", firsts[:20])
        # The binding's default selector puts sharding key o on queue o % (number of queues).
        nq = len(per_queue)
        for o, q in sorted(order_queue.items()):
            ctx.check("order %d queue" % o, o % nq, q)
        if got.overlap:
            ctx.fail("listener calls at once on one queue", "none", "queues %s" % sorted(set(got.overlap)))
        threads = len({r["thread"] for r in seen})
        details += " orders=%d threads=%d" % (len(steps), threads)
    return details


def scenario_pull(ctx):
    from rocketmq.client import PullConsumer, RecvMessage
    from rocketmq.ffi import dll, _CMessageQueue, _CPullStatus
    from rocketmq.exceptions import ffi_check
    topic = ctx.name("t")
    msgs = make_messages(ctx, topic)
    producer = send_all(ctx, msgs)
    producer.shutdown()
    check_sends(ctx, msgs)

    consumer = PullConsumer(ctx.name("cg"))
    consumer.set_namesrv_addr(ctx.namesrv)
    consumer.start()
    mqs_ptr = ctypes.POINTER(_CMessageQueue)()
    n = ctypes.c_int()
    ffi_check(dll.FetchSubscriptionMessageQueues(consumer._handle, topic.encode(),
                                                 ctypes.pointer(mqs_ptr), ctypes.pointer(n)))
    queues = [_CMessageQueue(mqs_ptr[i].topic, mqs_ptr[i].brokerName, mqs_ptr[i].queueId)
              for i in range(n.value)]
    ffi_check(dll.ReleaseSubscriptionMessageQueue(mqs_ptr))
    if not queues:
        ctx.fail("queues of the topic", "at least 1", 0)
    next_offset = {mq.queueId: 0 for mq in queues}
    max_offset = {}
    got = Received()
    statuses = collections.Counter()
    pulls = 0
    deadline = now() + ctx.timeout
    # Read every queue to its end (NO_NEW_MSG), and go round again until all N are in or the time
    # is up: a message acknowledged a moment ago may not be in its consume queue yet.
    while now() < deadline:
        for mq in queues:
            while now() < deadline:
                res = dll.Pull(consumer._handle, ctypes.pointer(mq), b"*",
                               next_offset[mq.queueId], 32)
                pulls += 1
                status = _CPullStatus(res.pullStatus)
                statuses[status.name] += 1
                if status == _CPullStatus.FOUND:
                    for i in range(res.size):
                        got.add(RecvMessage(res.msgFoundList[i]))
                if status != _CPullStatus.BROKER_TIMEOUT:
                    next_offset[mq.queueId] = res.nextBeginOffset
                    max_offset[mq.queueId] = res.maxOffset
                dll.ReleasePullResult(res)
                if status == _CPullStatus.NO_NEW_MSG:
                    break
                if status in (_CPullStatus.BROKER_TIMEOUT, _CPullStatus.OFFSET_ILLEGAL):
                    time.sleep(0.05)
        if got.distinct_keys() >= len(msgs):
            break
        time.sleep(0.05)
    consumer.shutdown()
    seen = got.snapshot()
    repeats, per_queue = check_received(ctx, msgs, seen)
    for q, offs in per_queue.items():
        ctx.check("queue %d next offset at the end" % q, len(set(offs)), next_offset.get(q))
        ctx.check("queue %d max offset" % q, len(set(offs)), max_offset.get(q))
    for q in next_offset:
        if q not in per_queue:
            ctx.check("queue %d (no messages) next offset" % q, 0, next_offset[q])
    return "received=%d repeats=%d queues=%d pulls=%d %s" % (
        len({r["keys"] for r in seen}), repeats, len(queues), pulls,
        " ".join("%s=%d" % kv for kv in sorted(statuses.items())))


def run_scenario(ctx):
    if ctx.scenario == "produce":
        return scenario_produce(ctx)
    if ctx.scenario == "push-concurrent":
        return scenario_push(ctx, orderly=False)
    if ctx.scenario == "push-orderly":
        return scenario_push(ctx, orderly=True)
    return scenario_pull(ctx)


def finish(code, text, wire=None):
    if wire is not None:
        for line in wire.summary():
            print(line, file=sys.stderr)
    print(text, flush=True)
    sys.stderr.flush()
    os._exit(code)  # skip the binding's destructors (they shut the client down a second time)


def main():
    ap = argparse.ArgumentParser(prog="run.sh", description=__doc__.split("\n\n")[0])
    ap.add_argument("scenario", choices=SCENARIOS + ("proxy",))
    ap.add_argument("--namesrv", required=True)
    ap.add_argument("--count", type=int, default=100)
    ap.add_argument("--timeout", type=float, default=60)
    ap.add_argument("--settle-ms", type=int, default=500)
    ap.add_argument("--suffix")
    ap.add_argument("--capture")
    args = ap.parse_args()
    if args.count < ORDERS and args.scenario == "push-orderly":
        ap.error("push-orderly needs --count of at least %d" % ORDERS)
    if args.scenario == "proxy":
        if not args.capture:
            ap.error("proxy needs --capture FILE")
        wire = WireLog(args.namesrv, args.capture)
        print(wire.namesrv, flush=True)
        stop = threading.Event()
        for s in (signal.SIGINT, signal.SIGTERM):
            signal.signal(s, lambda *_: stop.set())
        stop.wait(args.timeout)
        for line in wire.summary():
            print(line, file=sys.stderr)
        sys.stderr.flush()
        os._exit(0)

    wire = WireLog(args.namesrv, args.capture) if args.capture else None
    if wire is not None:
        args.namesrv = wire.namesrv
    ctx = Ctx(args)
    bound = 10 * args.timeout

    def watchdog():
        time.sleep(bound)
        finish(1, "FAIL %s: still running after %d s (the run's overall bound); giving up"
               % (ctx.scenario, bound), wire)

    threading.Thread(target=watchdog, daemon=True).start()
    t = now()
    try:
        details = run_scenario(ctx)
    except Exception as e:
        ctx.fails.append("%s: %s" % (type(e).__name__, e))
        details = None
    secs = now() - t
    if ctx.fails:
        text = "FAIL %s: %d difference(s) after %.1fs (suffix %s)\n  %s" % (
            ctx.scenario, len(ctx.fails), secs, ctx.suffix, "\n  ".join(ctx.fails[:20]))
        finish(1, text, wire)
    finish(0, "PASS %s %s time=%.1fs" % (ctx.scenario, details, secs), wire)


if __name__ == "__main__":
    main()
