"""The workloads, by the names used in the results."""

from dataclasses import dataclass


@dataclass(frozen=True)
class Workload:
    name: str
    kind: str  # produce | consume | e2e
    size: int  # message body bytes
    producers: int = 1
    mode: str = "sync"  # sync | pipelined
    batch: int = 1
    flush: str = None  # "sync" forces SYNC_FLUSH whatever --flush says
    default: bool = True  # part of the default set
    what: str = ""


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
]

BY_NAME = {w.name: w for w in WORKLOADS}
DEFAULT = [w.name for w in WORKLOADS if w.default]
# With --rates and no --workloads: the workloads whose senders have room for many sends in flight,
# so that the offered rate, not the number of senders, is what limits them.
RATE_DEFAULT = ["pipelined-1k-4p", "e2e-1k"]
