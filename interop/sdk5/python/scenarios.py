"""The 5.x gRPC SDK interop scenarios with the Apache RocketMQ Python client
(rocketmq-python-client 5.1.2) against a RocketMQ proxy endpoint.

    python scenarios.py --endpoint HOST:PORT --suffix S [--only "SCEN ..."] [--timeout SECONDS]
                        [--log-dir DIR] [--namesrv HOST:PORT] [--verbose]

Scenarios: normal, fifo, delay, transaction, redeliver, push. They use the topics
sdk5-python-<kind>-S and groups sdk5-python-<scenario>-S, which must exist beforehand (the push
scenario also reads its DLQ with the group sdk5-python-dlq-S). The scenarios run concurrently, one
thread each; their lines are printed in the fixed order: "PASS python <scenario> <details>" or
"FAIL python <scenario>: <what differed>". Exit status 0 iff none failed, 1 otherwise, 2 on a usage
error. The SDK logs to a file only; --log-dir chooses where.
"""

import argparse
import os
import re
import sys
import threading
import time

LANG = "python"
SCENARIOS = ["normal", "fifo", "delay", "transaction", "redeliver", "push"]
VERBOSE = False


def trace(scen, text):
    if VERBOSE:
        stamp = time.strftime("%H:%M:%S", time.localtime()) + f".{int(time.time() * 1000) % 1000:03d}"
        print(f"{stamp} {scen}: {text}", file=sys.stderr, flush=True)


class UsageError(Exception):
    pass


class Args(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError(message)


def parse_args(argv):
    p = Args(prog="scenarios.py", add_help=False)
    p.add_argument("--endpoint", required=True)
    p.add_argument("--suffix", required=True)
    p.add_argument("--only", default="")
    p.add_argument("--timeout", type=int, default=150)
    p.add_argument("--log-dir", default="")
    p.add_argument("--namesrv", default="")  # accepted for a uniform command line; unused
    p.add_argument("--verbose", action="store_true")
    a = p.parse_args(argv)
    if a.timeout < 10:
        raise UsageError("--timeout must be at least 10 seconds")
    a.selected = a.only.split() or list(SCENARIOS)
    for name in a.selected:
        if name not in SCENARIOS:
            raise UsageError(f"unknown scenario {name}")
    return a


ARGS = None
try:
    ARGS = parse_args(sys.argv[1:])
except UsageError as e:
    print(f"scenarios.py: {e}", file=sys.stderr)
    print('usage: scenarios.py --endpoint HOST:PORT --suffix S [--only "SCEN ..."] [--timeout SECONDS] '
          "[--log-dir DIR] [--namesrv HOST:PORT] [--verbose]", file=sys.stderr)
    print("scenarios: " + " ".join(SCENARIOS), file=sys.stderr)
    sys.exit(2)
VERBOSE = ARGS.verbose

if ARGS.log_dir:
    # The SDK creates ~/logs/rocketmq_python/ and logs there, with the home directory taken when
    # it is imported and no setting for it; point the home directory of this process elsewhere.
    os.makedirs(ARGS.log_dir, exist_ok=True)
    os.environ["HOME"] = ARGS.log_dir

from rocketmq import (ClientConfiguration, ConsumeResult, Credentials,  # noqa: E402
                      FilterExpression, Message, MessageListener, Producer,
                      PushConsumer, SimpleConsumer, TransactionChecker,
                      TransactionResolution)


# --- common ----------------------------------------------------------------------------------

class Fail(Exception):
    """A scenario ends early with this as its FAIL detail."""


class Problems(list):
    def add(self, text):
        self.append(text)

    def __str__(self):
        show = 6
        if len(self) <= show:
            return "; ".join(self)
        return "; ".join(self[:show]) + f"; and {len(self) - show} more"


def topic(kind):
    return f"sdk5-{LANG}-{kind}-{ARGS.suffix}"


def group(scen):
    return f"sdk5-{LANG}-{scen}-{ARGS.suffix}"


def config():
    # Empty credentials: the proxy runs without ACL (the SDK still sends a signature header).
    return ClientConfiguration(ARGS.endpoint, Credentials(), request_timeout=5)


def bounded(fn, seconds, what):
    """Runs fn in a thread and waits at most `seconds` for it (the SDK's startup and shutdown have
    no deadline of their own); returns its result or raises what it raised."""
    box = {}

    def run():
        try:
            box["value"] = fn()
        except BaseException as e:  # noqa: BLE001 - handed to the caller
            box["error"] = e

    t = threading.Thread(target=run, daemon=True, name=f"bounded-{what}")
    t.start()
    t.join(seconds)
    if t.is_alive():
        raise Fail(f"{what} did not finish within {seconds}s")
    if "error" in box:
        raise box["error"]
    return box.get("value")


class Clients:
    """Started clients of a scenario, shut down (bounded) when it ends."""

    def __init__(self, scen):
        self.scen = scen
        self.started = []

    def start(self, client, what):
        try:
            bounded(client.startup, 20, f"{what} startup")
        except Fail:
            raise
        except Exception as e:  # noqa: BLE001
            raise Fail(f"{what} startup: {e}")
        self.started.append((client, what))
        return client

    def producer(self, topics, checker=None):
        return self.start(Producer(config(), topics=topics, checker=checker), "producer")

    def simple(self, grp, tpc, await_duration=5):
        subs = {tpc: FilterExpression()} if tpc else None
        return self.start(SimpleConsumer(config(), grp, subs, await_duration=await_duration), "simple consumer")

    def close(self):
        for client, what in reversed(self.started):
            try:
                bounded(client.shutdown, 5, f"{what} shutdown")
            except Exception as e:  # noqa: BLE001 - reported, not fatal
                trace(self.scen, f"{what} shutdown: {e}")
        self.started = []


def body_of(msg):
    b = msg.body
    return b.decode("utf-8", "replace") if isinstance(b, (bytes, bytearray)) else str(b)


def ours(msg, prefix):
    """Index i of a body "<prefix>-<i>-<suffix>" of this run, else None."""
    m = re.fullmatch(re.escape(prefix) + r"-(\d+)-" + re.escape(ARGS.suffix), body_of(msg))
    return int(m.group(1)) if m else None


def receive_loop(scen, consumer, until, max_num, invisible, handle):
    """Receives until handle(msg, at) returns True or until has passed when a long poll would start.
    Each long poll runs to its end (a cancelled one may still take a message out of view), so the
    loop can watch up to one await duration past until. Errors are retried after a pause; the last
    one is returned if the loop ends without handle saying it is done."""
    last_err = None
    while time.time() < until:
        try:
            msgs = consumer.receive(max_num, invisible)
        except Exception as e:  # noqa: BLE001 - a long poll can fail transiently
            last_err = e
            trace(scen, f"receive: {e!r}")
            time.sleep(0.5)
            continue
        at = time.time()
        trace(scen, f"receive: {len(msgs)} message(s)")
        for m in msgs:
            if handle(m, at):
                return None
    return last_err


def ack(consumer, msg, bad, what):
    try:
        consumer.ack(msg)  # raises on a status other than OK
    except Exception as e:  # noqa: BLE001
        bad.add(f"ack of {what}: {e}")


def secs(x):
    return f"{x:.1f}s"


# --- scenarios -------------------------------------------------------------------------------

def tag_of(i):
    return "TagB" if i % 2 == 1 else "TagA"


def scenario_normal(cl):
    n = 20
    tpc, grp = topic("normal"), group("normal")
    c = cl.simple(grp, tpc)
    p = cl.producer([tpc])
    ids = {}
    for i in range(n):
        m = Message()
        m.topic = tpc
        m.body = f"normal-{i}-{ARGS.suffix}".encode()
        m.tag = tag_of(i)
        m.keys = f"k-{i}"
        m.add_property("idx", str(i))
        try:
            ids[i] = p.send(m).message_id
        except Exception as e:  # noqa: BLE001
            raise Fail(f"send {i}: {e}")

    bad = Problems()
    seen = {}
    strays = 0

    def handle(m, _at):
        nonlocal strays
        i = ours(m, "normal")
        if i is None or i >= n:
            strays += 1
        else:
            seen[i] = seen.get(i, 0) + 1
            if seen[i] > 1:
                bad.add(f"message {i} received {seen[i]} times")
            if m.tag != tag_of(i):
                bad.add(f"message {i}: tag {m.tag}, want {tag_of(i)}")
            if set(m.keys or ()) != {f"k-{i}"}:
                bad.add(f"message {i}: keys {sorted(m.keys or ())}, want [k-{i}]")
            if (m.properties or {}).get("idx") != str(i):
                bad.add(f"message {i}: property idx={(m.properties or {}).get('idx')!r}")
            if m.message_id != ids[i]:
                bad.add(f"message {i}: id {m.message_id}, send receipt said {ids[i]}")
            if m.delivery_attempt != 1:
                bad.add(f"message {i}: delivery attempt {m.delivery_attempt}, want 1")
        ack(c, m, bad, body_of(m))
        return len(seen) == n

    err = receive_loop("normal", c, time.time() + 30, 16, 20, handle)
    if len(seen) < n:
        missing = [i for i in range(n) if i not in seen]
        bad.add(f"received {len(seen)} of {n} within 30s, missing {missing} (receive error: {err})")
    # One more long poll: nothing of ours may come back after the acks.
    again = 0
    try:
        for m in c.receive(16, 20):
            if ours(m, "normal") is not None:
                again += 1
            ack(c, m, bad, body_of(m))
    except Exception as e:  # noqa: BLE001
        bad.add(f"final receive: {e}")
    if again:
        bad.add(f"{again} message(s) delivered again after their ack")
    if bad:
        raise Fail(str(bad))
    return (f"{len(seen)}/{n} received once with tag, keys, idx property, send-receipt id and attempt 1; "
            f"acked; nothing more in a 5s long poll (strays from elsewhere: {strays})")


def scenario_fifo(cl):
    groups, per = 3, 10
    tpc, grp = topic("fifo"), group("fifo")
    c = cl.simple(grp, tpc, await_duration=3)
    p = cl.producer([tpc])
    # Interleaved, so that each message group's order is not simply the topic's order.
    for j in range(per):
        for g in range(groups):
            m = Message()
            m.topic = tpc
            m.body = f"fifo-{g * 100 + j}-{ARGS.suffix}".encode()
            m.message_group = f"g{g}"
            try:
                p.send(m)
            except Exception as e:  # noqa: BLE001
                raise Fail(f"send g{g}/{j}: {e}")

    bad = Problems()
    order = [[] for _ in range(groups)]
    total = 0

    def handle(m, _at):
        nonlocal total
        v = ours(m, "fifo")
        if v is not None and v // 100 < groups and v % 100 < per:
            g, j = v // 100, v % 100
            if m.message_group != f"g{g}":
                bad.add(f"g{g}/{j}: message group {m.message_group}")
            order[g].append(j)
            total += 1
        # Acked as it goes: the next message of a group is delivered only after this one.
        ack(c, m, bad, body_of(m))
        return total == groups * per

    err = receive_loop("fifo", c, time.time() + 30, 32, 20, handle)
    if total < groups * per:
        bad.add(f"received {total} of {groups * per} within 30s (receive error: {err})")
    try:  # a last long poll, for duplicates
        for m in c.receive(32, 20):
            v = ours(m, "fifo")
            if v is not None:
                order[(v // 100) % groups].append(v % 100)
            ack(c, m, bad, body_of(m))
    except Exception as e:  # noqa: BLE001
        bad.add(f"final receive: {e}")
    for g in range(groups):
        if order[g] != list(range(per)):
            bad.add(f"group g{g} arrived as {order[g]}, want {list(range(per))}")
    if bad:
        raise Fail(str(bad))
    return f"{groups} groups x {per} received once each, in send order per group, acked as received"


def scenario_delay(cl):
    n = 5
    tpc, grp = topic("delay"), group("delay")
    c = cl.simple(grp, tpc)
    p = cl.producer([tpc])
    due, sent = {}, {}
    for i in range(n):
        m = Message()
        m.topic = tpc
        m.body = f"delay-{i}-{ARGS.suffix}".encode()
        sent[i] = time.time()
        # The SDK sends the delivery timestamp in whole seconds: round up, so it is >= now+3s.
        due[i] = int(sent[i] + 3) + 1
        m.delivery_timestamp = due[i]
        try:
            p.send(m)
        except Exception as e:  # noqa: BLE001
            raise Fail(f"send {i}: {e}")

    bad = Problems()
    got = {}

    def handle(m, at):
        i = ours(m, "delay")
        if i is not None and i < n:
            if i in got:
                bad.add(f"message {i} received twice")
            else:
                got[i] = at
            if m.delivery_timestamp != due[i] * 1000:
                bad.add(f"message {i}: delivery timestamp {m.delivery_timestamp} ms, sent with {due[i] * 1000}")
        ack(c, m, bad, body_of(m))
        return len(got) == n

    err = receive_loop("delay", c, sent[n - 1] + 15, 16, 20, handle)
    deltas = []
    for i in range(n):
        if i not in got:
            bad.add(f"message {i} not received within 15s of its send (receive error: {err})")
            continue
        d = got[i] - due[i]
        if d < -1:
            bad.add(f"message {i} received {secs(-d)} before its delivery time")
        if got[i] - sent[i] > 15:
            bad.add(f"message {i} received {secs(got[i] - sent[i])} after its send")
        deltas.append(d)
    if bad:
        raise Fail(str(bad))
    lead = min(due[i] - sent[i] for i in range(n))
    return (f"{n}/{n} received {min(deltas):+.1f}s..{max(deltas):+.1f}s relative to their delivery time "
            f"(whole seconds, {lead:.1f}s or more after the send), delivery timestamp intact")


def scenario_transaction(cl):
    tpc, grp = topic("txn"), group("transaction")

    def body(name):
        return f"txn-{name}-{ARGS.suffix}"

    lock = threading.Lock()
    checked = {}
    first_check = [None]

    class Checker(TransactionChecker):
        def check(self, message):
            b = body_of(message)
            with lock:
                checked[b] = checked.get(b, 0) + 1
                if b == body("C") and first_check[0] is None:
                    first_check[0] = time.time()
            if b in (body("A"), body("C")):
                return TransactionResolution.COMMIT
            return TransactionResolution.ROLLBACK

    c = cl.simple(grp, tpc)
    p = cl.producer([tpc], checker=Checker())

    def send(name, end):
        tx = p.begin_transaction()
        m = Message()
        m.topic = tpc
        m.body = body(name).encode()
        m.keys = f"txn-{name}"
        try:
            p.send(m, transaction=tx)
        except Exception as e:  # noqa: BLE001
            raise Fail(f"send {name}: {e}")
        if end:
            try:
                getattr(tx, end)()
            except Exception as e:  # noqa: BLE001
                raise Fail(f"{end} {name}: {e}")

    send("A", "commit")
    send("B", "rollback")
    sent_c = time.time()
    send("C", None)  # left UNKNOWN: only the check-back resolves it

    bad = Problems()
    got = {}
    got_c = [None]
    grace = 5

    def record(m, at):
        b = body_of(m)
        if b.startswith("txn-") and b.endswith("-" + ARGS.suffix):
            got[b] = got.get(b, 0) + 1
            if b == body("C") and got_c[0] is None:
                got_c[0] = at
        ack(c, m, bad, b)

    def first(m, at):
        record(m, at)
        return got.get(body("A"), 0) > 0 and got_c[0] is not None

    # The check-back reaches the producer only once the proxy has registered the producer group
    # with the broker, which its transaction heartbeat does periodically.
    err = receive_loop("transaction", c, sent_c + 40, 16, 20, first)
    if got_c[0] is not None:  # a few more seconds, for B or a second copy to show up
        receive_loop("transaction", c, got_c[0] + grace, 16, 20, lambda m, at: record(m, at) or False)
    with lock:
        checks_a, checks_b, checks_c = (checked.get(body(x), 0) for x in "ABC")
        check_delay = (first_check[0] - sent_c) if first_check[0] else None
    if got.get(body("A"), 0) != 1:
        bad.add(f"A (committed) received {got.get(body('A'), 0)} times")
    if got.get(body("C"), 0) != 1:
        bad.add(f"C (unknown, committed by the check) received {got.get(body('C'), 0)} times")
    if got.get(body("B"), 0) != 0:
        bad.add(f"B (rolled back) received {got[body('B')]} times")
    if checks_c == 0:
        bad.add("the checker was never asked about C")
    for b, k in got.items():
        if b not in (body("A"), body("B"), body("C")):
            bad.add(f"unexpected message {b!r} received {k} times")
    if bad and err:
        bad.add(f"receive error: {err}")
    if bad:
        raise Fail(f"{bad} (checker asked about A {checks_a}x, B {checks_b}x, C {checks_c}x)")
    # A check of A or B is harmless (the checker answers as the producer did); it happens when the
    # broker checks before it has recorded the commit or rollback (its op batches).
    resolved = f"; checker also asked about A {checks_a}x, B {checks_b}x" if checks_a + checks_b else ""
    return (f"A received once, C received once after the check-back (first check {secs(check_delay)} after its "
            f"send, {checks_c} check(s), received {secs(got_c[0] - sent_c)} after its send), B never "
            f"(watched {secs(grace)} past C){resolved}")


def scenario_redeliver(cl):
    invisible = 10
    tpc, grp = topic("redeliver"), group("redeliver")
    c = cl.simple(grp, tpc)
    p = cl.producer([tpc])
    want = f"redeliver-0-{ARGS.suffix}"
    m = Message()
    m.topic = tpc
    m.body = want.encode()
    try:
        msg_id = p.send(m).message_id
    except Exception as e:  # noqa: BLE001
        raise Fail(f"send: {e}")

    bad = Problems()
    box = {}

    def catch(key):
        def handle(msg, at):
            if body_of(msg) != want:
                ack(c, msg, bad, body_of(msg))
                return False
            box[key] = (msg, at)
            return True
        return handle

    err = receive_loop("redeliver", c, time.time() + 15, 1, invisible, catch("first"))
    if "first" not in box:
        raise Fail(f"first receive: message not received within 15s ({err})")
    first, t1 = box["first"]
    if first.delivery_attempt != 1:
        bad.add(f"first delivery attempt {first.delivery_attempt}, want 1")
    # Not acked: it must come back once the 10s are over, not before 8s.
    err = receive_loop("redeliver", c, t1 + 25, 1, invisible, catch("second"))
    if "second" not in box:
        raise Fail(f"not redelivered within 25s of the first receive ({err})")
    second, t2 = box["second"]
    gap = t2 - t1
    if gap < 8:
        bad.add(f"redelivered after {secs(gap)}, before 8s")
    if second.delivery_attempt != 2:
        bad.add(f"redelivery has delivery attempt {second.delivery_attempt}, want 2")
    if second.message_id != msg_id:
        bad.add(f"redelivery has id {second.message_id}, send receipt said {msg_id}")

    # The SDK replaces the message's receipt handle with the one the change returns; ack uses it.
    old_handle = second.receipt_handle
    try:
        c.change_invisible_duration(second, invisible)
    except Exception as e:  # noqa: BLE001
        raise Fail(f"{bad}; change invisible duration: {e}" if bad else f"change invisible duration: {e}")
    if not second.receipt_handle:
        bad.add("change invisible duration returned an empty receipt handle")
    handle_note = "same handle" if second.receipt_handle == old_handle else "new handle"
    ack(c, second, bad, "the redelivery with the changed handle")
    acked = time.time()

    def watch(msg, at):
        if body_of(msg) == want:
            bad.add(f"delivered again {secs(at - acked)} after the ack (attempt {msg.delivery_attempt})")
        ack(c, msg, bad, body_of(msg))
        return False

    err = receive_loop("redeliver", c, acked + 13, 1, invisible, watch)
    if err:
        bad.add(f"watch after ack: {err}")
    watched = time.time() - acked
    if watched < 12:
        bad.add(f"watched only {secs(watched)} after the ack")
    if bad:
        raise Fail(str(bad))
    return (f"attempt 1 not acked, redelivered after {secs(gap)} with attempt 2 and the same id; "
            f"change-invisible-duration 10s ok ({handle_note}), ack with it ok; not delivered again in {secs(watched)}")


def gaps(ds):
    ts = sorted(at for _a, at, _ok in ds)
    return ",".join(secs(b - a) for a, b in zip(ts, ts[1:])) or "-"


def attempts(ds):
    return ",".join(str(a) for a, _at, _ok in ds) or "none"


def scenario_push(cl):
    n = 10
    tpc, grp = topic("push"), group("push")
    dlq_topic = "%DLQ%" + grp
    lock = threading.Lock()
    seen = {}

    class Listener(MessageListener):
        def consume(self, message):
            i = ours(message, "push")
            if i is None:
                return ConsumeResult.SUCCESS
            a = message.delivery_attempt
            succeed = not (i == 7 or (i == 3 and a < 3))
            with lock:
                seen.setdefault(i, []).append((a, time.time(), succeed))
            trace("push", f"message {i} attempt {a} -> success {succeed}")
            return ConsumeResult.SUCCESS if succeed else ConsumeResult.FAILURE

    pc = cl.start(PushConsumer(config(), grp, Listener(), {tpc: FilterExpression()},
                               consumption_thread_count=4), "push consumer")
    p = cl.producer([tpc])
    ids = {}
    for i in range(n):
        m = Message()
        m.topic = tpc
        m.body = f"push-{i}-{ARGS.suffix}".encode()
        try:
            ids[i] = p.send(m).message_id
        except Exception as e:  # noqa: BLE001
            raise Fail(f"send {i}: {e}")
    sent = time.time()

    def snapshot():
        with lock:
            return {k: list(v) for k, v in seen.items()}

    def settled(s):
        for i in range(n):
            d = s.get(i, [])
            if i == 7:
                if len(d) < 3:
                    return False
            elif not d or not d[-1][2]:
                return False
        return True

    while time.time() - sent < 70 and not settled(snapshot()):
        time.sleep(0.2)

    # Message 7 has failed its last allowed attempt; the proxy moves it to the DLQ when it is due
    # again, so the push consumer keeps running meanwhile. The DLQ topic exists only from then on:
    # subscribing to it (which looks up its route) is retried. The reader must not be of the push
    # group: the proxy would find the copy's delivery attempts (3) exhausted for that group again
    # and forward it back into the same DLQ on every receive, instead of delivering it.
    bad = Problems()
    dlq_note = ""
    trace("push", "settled; reading the DLQ")
    dc = cl.simple(group("dlq"), None, await_duration=3)
    dlq_start = time.time()
    sub_err = None
    subscribed = False
    # Up to the push consumer's next long poll after the last back-off, then up to the proxy's
    # route cache refresh (it keeps a "no such topic" answer for a while).
    while time.time() - dlq_start < 60:
        try:
            dc.subscribe(dlq_topic, FilterExpression())
            subscribed = True
            break
        except Exception as e:  # noqa: BLE001 - no route until the first DLQ message
            sub_err = e
            time.sleep(1)
    trace("push", f"DLQ subscribed {subscribed} after {secs(time.time() - dlq_start)} ({sub_err})")
    if not subscribed:
        bad.add(f"{dlq_topic} never routable within {secs(time.time() - dlq_start)}: {sub_err}")
    else:
        box = {}

        def handle(m, at):
            if ours(m, "push") == 7:
                box["found"] = (m, at)
            else:
                bad.add(f"unexpected message in {dlq_topic}: {body_of(m)!r}")
            ack(dc, m, bad, f"{body_of(m)} in {dlq_topic}")
            return "found" in box

        rerr = receive_loop("push", dc, time.time() + 15, 16, 20, handle)
        if "found" not in box:
            bad.add(f"message 7 not received from {dlq_topic} (receive error: {rerr})")
        else:
            found, found_at = box["found"]
            if found.message_id != ids[7]:
                bad.add(f"DLQ copy of 7 has id {found.message_id}, send receipt said {ids[7]}")
            last = max(at for _a, at, _ok in snapshot()[7])
            dlq_note = (f"7 read from {dlq_topic} {secs(found_at - last)} after its 3rd failure "
                        f"(attempt {found.delivery_attempt} there, same id)")

    s = snapshot()
    for i in range(n):
        d = s.get(i, [])
        if i == 3:
            if attempts(d) != "1,2,3" or not d[-1][2]:
                bad.add(f"message 3 attempts {attempts(d)}, want 1,2,3 with success on 3")
        elif i == 7:
            if attempts(d) != "1,2,3":
                bad.add(f"message 7 attempts {attempts(d)}, want 1,2,3 then the DLQ")
        elif len(d) != 1 or not d[0][2] or d[0][0] != 1:
            bad.add(f"message {i} deliveries {attempts(d)}, want one (attempt 1)")
    if bad:
        raise Fail(f"{bad} (deliveries: 3 at {gaps(s.get(3, []))}, 7 at {gaps(s.get(7, []))})")
    return (f"8 consumed once; 3 attempts 1,2,3 (back-off {gaps(s[3])}); 7 attempts 1,2,3 "
            f"(back-off {gaps(s[7])}), not a 4th time; {dlq_note}")


RUNNERS = {
    "normal": scenario_normal,
    "fifo": scenario_fifo,
    "delay": scenario_delay,
    "transaction": scenario_transaction,
    "redeliver": scenario_redeliver,
    "push": scenario_push,
}


def run_one(name, out):
    cl = Clients(name)
    try:
        out[name] = ("PASS", RUNNERS[name](cl))
    except Fail as e:
        out[name] = ("FAIL", str(e))
    except Exception as e:  # noqa: BLE001 - any SDK surprise is this scenario's failure
        out[name] = ("FAIL", f"{type(e).__name__}: {e}")
    finally:
        cl.close()


def main():
    results = {}
    threads = {}
    for name in ARGS.selected:
        t = threading.Thread(target=run_one, args=(name, results), daemon=True, name=f"scenario-{name}")
        t.start()
        threads[name] = t
    # Each scenario bounds its own waits; this is the backstop for one stuck inside the SDK.
    hard_stop = time.time() + ARGS.timeout
    failed = False
    for name in ARGS.selected:
        threads[name].join(max(0.0, hard_stop - time.time()))
        verdict, detail = results.get(name, ("FAIL", f"did not finish within {ARGS.timeout}s"))
        if verdict == "PASS":
            print(f"PASS {LANG} {name} {detail}", flush=True)
        else:
            failed = True
            print(f"FAIL {LANG} {name}: {detail}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    status = main()
    sys.stdout.flush()
    sys.stderr.flush()
    # The SDK's threads (gRPC event loops, schedulers, consumption pools) are not all daemons.
    os._exit(status)
