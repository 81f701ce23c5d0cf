"""The workloads, by the names used in the results."""

from dataclasses import dataclass


@dataclass(frozen=True)
class Workload:
    name: str
    kind: str  # produce | consume | e2e | timers | timers-pending | pop
    size: int  # message body bytes
    producers: int = 1
    mode: str = "sync"  # sync | pipelined
    batch: int = 1
    flush: str = None  # "sync" forces SYNC_FLUSH whatever --flush says
    default: bool = True  # part of the default set
    filter: str = None  # consume: "sql" or "tag", over a backlog sorted into FILTER_CLASSES classes
    queues: int = None  # queues of the topic; None: --queues
    what: str = ""

    def queue_count(self, ctx):
        return self.queues or ctx.queues


WORKLOADS = [
    Workload("sync-1k", "produce", 1024, producers=1, mode="sync",
             what="1 producer, 1 KiB messages, one synchronous send at a time: send latency"),
    Workload("pipelined-1k-4p", "produce", 1024, producers=4, mode="pipelined",
             what="4 producers, 1 KiB messages, many sends in flight: throughput"),
    Workload("batch-32x1k", "produce", 1024, producers=4, mode="sync", batch=32,
             what="4 producers, synchronous batch sends of 32 x 1 KiB messages"),
    Workload("pipelined-128b", "produce", 128, producers=4, mode="pipelined",
             what="like pipelined-1k-4p with 128-byte messages: per-message overhead"),
    Workload("pipelined-16k", "produce", 16384, producers=4, mode="pipelined",
             what="like pipelined-1k-4p with 16 KiB messages: bytes moved"),
    Workload("consume-catchup-1m", "consume", 1024,
             what="a new consumer group reads a backlog of 1,000,000 x 1 KiB messages from the first offset"),
    Workload("sync-flush-16p", "produce", 1024, producers=16, mode="sync", flush="sync",
             what="broker in SYNC_FLUSH, 16 producers, 1 KiB synchronous sends: group commit"),
    Workload("e2e-1k", "e2e", 1024, default=False,
             what="(silo bench only, not run by default) produce and consume at once: end-to-end latency"),
    Workload("timer-lateness-100k", "timers", 128, producers=4, mode="pipelined", default=False,
             what="(silo bench only, not run by default) 100,000 timer messages (TIMER_DELIVER_MS) due evenly "
             "over 60 s, consumed as they fire: lateness = receipt - due time, early and missing timers"),
    Workload("timers-pending-1m", "timers-pending", 128, producers=4, mode="pipelined", default=False,
             what="(silo bench only, not run by default) 1,000,000 timer messages due an hour ahead are sent, "
             "then the idle broker is measured for 30 s: RSS, anonymous RSS, CPU"),
    Workload("consume-sql-10pct", "consume", 1024, filter="sql", default=False,
             what="(silo bench only, not run by default) a new consumer group reads a backlog of 1,000,000 x 1 KiB "
             "messages through the SQL92 selector `a = 3`, which 10 % match"),
    Workload("consume-tag-10pct", "consume", 1024, filter="tag", default=False,
             what="(silo bench only, not run by default) as consume-sql-10pct with the tag subscription `T3`"),
    Workload("pop-ack-1m", "pop", 1024, default=False,
             what="(silo bench only, not run by default) 4 POP consumers of one new group drain a backlog of "
             "1,000,000 x 1 KiB messages, acknowledging each (POP_MESSAGE of 32, then one ACK_MESSAGE per "
             "message): msgs/s and the latency of one pop-and-ack cycle"),
]

# Scaling with the work: pipelined 1 KiB sends at 1, 4, 16 and 64 producers (8 queues), and at
# 1, 8 and 64 queues (4 producers). pipelined-1k-4p, with the default 8 queues, is the point both
# curves share. `--workloads scaling` runs them all; charts.py draws them as curves.
SCALE_PRODUCERS = [1, 4, 16, 64]
SCALE_QUEUES = [1, 8, 64]
for _p in SCALE_PRODUCERS:
    if _p != 4:
        WORKLOADS.append(Workload(f"pipelined-1k-{_p}p", "produce", 1024, producers=_p, mode="pipelined", default=False,
                                  queues=8, what=f"(scaling) {_p} producers, 1 KiB messages, many sends in flight, 8 queues"))
for _q in SCALE_QUEUES:
    if _q != 8:
        WORKLOADS.append(Workload(f"pipelined-1k-4p-{_q}q", "produce", 1024, producers=4, mode="pipelined",
                                  default=False, queues=_q,
                                  what=f"(scaling) 4 producers, 1 KiB messages, many sends in flight, {_q} queue"
                                  + ("s" if _q > 1 else "")))
SCALING = {
    "producers": [(p, "pipelined-1k-4p" if p == 4 else f"pipelined-1k-{p}p") for p in SCALE_PRODUCERS],
    "queues": [(q, "pipelined-1k-4p" if q == 8 else f"pipelined-1k-4p-{q}q") for q in SCALE_QUEUES],
}
# What `--workloads scaling` stands for.
SCALING_WORKLOADS = list(dict.fromkeys(name for curve in SCALING.values() for _, name in curve))

# Filtered catch-ups: message i of the backlog has the tag T{i % 10} and the property a = i % 10.
FILTER_CLASSES = 10
FILTER_EXPRESSIONS = {"sql": ("--sql", "a = 3"), "tag": ("--tag", "T3")}

BY_NAME = {w.name: w for w in WORKLOADS}
DEFAULT = [w.name for w in WORKLOADS if w.default]
# With --rates and no --workloads: the workloads whose senders have room for many sends in flight,
# so that the offered rate, not the number of senders, is what limits them.
RATE_DEFAULT = ["pipelined-1k-4p", "e2e-1k"]
