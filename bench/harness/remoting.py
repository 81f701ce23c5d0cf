"""A minimal RocketMQ remoting client: just the requests the harness needs to set up and observe a
broker, independently of the load generator.

Frames are `int32 total length | int32 (serialize type << 24 | header length) | JSON header | body`
(big-endian); requests and responses are matched by `opaque`. Only JSON headers are sent, and
responses in JSON are expected (all three brokers answer in the request's serialization).
"""

import itertools
import json
import re
import socket
import struct

# Request codes.
UPDATE_AND_CREATE_TOPIC = 17
QUERY_CONSUMER_OFFSET = 14
UPDATE_CONSUMER_OFFSET = 15
GET_MAX_OFFSET = 30
GET_ROUTEINFO_BY_TOPIC = 105

SUCCESS = 0
TOPIC_NOT_EXIST = 17
QUERY_NOT_FOUND = 22

# MQVersion ordinal of 5.3.3, what a 5.3.3 Java client sends.
VERSION = 479


class RemotingError(Exception):
    def __init__(self, code, remark):
        super().__init__(f"response code {code}: {remark}")
        self.code = code
        self.remark = remark


def _fastjson(text):
    """Parses fastjson output, which may write map keys bare ({0:"a"}); quotes them first."""
    return json.loads(re.sub(r'([{,])\s*(-?\d+)\s*:', r'\1"\2":', text))


class Connection:
    """One TCP connection to a name server or broker; requests are sent one at a time."""

    def __init__(self, addr, timeout=10.0):
        host, port = addr.rsplit(":", 1)
        self.addr = addr
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        self.opaque = itertools.count(1)

    def close(self):
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _read_exact(self, n):
        buf = bytearray()
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError(f"{self.addr} closed the connection")
            buf += chunk
        return bytes(buf)

    def request(self, code, ext_fields=None, body=b""):
        """Sends one request; returns (response header dict, body bytes)."""
        opaque = next(self.opaque)
        header = {
            "code": code,
            "flag": 0,
            "language": "PYTHON",
            "opaque": opaque,
            "serializeTypeCurrentRPC": "JSON",
            "version": VERSION,
            "extFields": {k: str(v) for k, v in (ext_fields or {}).items()},
        }
        hdr = json.dumps(header, separators=(",", ":")).encode()
        frame = struct.pack(">ii", 4 + len(hdr) + len(body), len(hdr)) + hdr + body
        self.sock.sendall(frame)
        while True:
            (total,) = struct.unpack(">i", self._read_exact(4))
            data = self._read_exact(total)
            (mark,) = struct.unpack(">i", data[:4])
            serialize_type, hlen = (mark >> 24) & 0xFF, mark & 0xFFFFFF
            if serialize_type != 0:
                raise ConnectionError(f"{self.addr} answered in serialization type {serialize_type}, not JSON")
            resp = _fastjson(data[4:4 + hlen].decode())
            if resp.get("opaque") == opaque and resp.get("flag", 0) & 1:
                return resp, data[4 + hlen:]
            # Anything else (a server-initiated request) is not for us; skip it.

    def call(self, code, ext_fields=None, body=b""):
        """Like request(), but raises RemotingError unless the response code is SUCCESS."""
        resp, rbody = self.request(code, ext_fields, body)
        if resp.get("code") != SUCCESS:
            raise RemotingError(resp.get("code"), resp.get("remark"))
        return resp, rbody


GET_BROKER_HA_STATUS = 907


def ha_status(broker):
    """GET_BROKER_HA_STATUS: a master's HARuntimeInfo (its slaves' confirmed offsets), a dict."""
    with Connection(broker, timeout=5.0) as c:
        _, body = c.call(GET_BROKER_HA_STATUS)
    return _fastjson(body.decode())


def route(namesrv, topic):
    """The name server's TopicRouteData for topic (a dict), or None if it has no route."""
    with Connection(namesrv) as c:
        resp, body = c.request(GET_ROUTEINFO_BY_TOPIC, {"topic": topic, "acceptStandardJsonOnly": "true"})
    if resp.get("code") == TOPIC_NOT_EXIST:
        return None
    if resp.get("code") != SUCCESS:
        raise RemotingError(resp.get("code"), resp.get("remark"))
    return _fastjson(body.decode())


def create_topic(broker, topic, queues):
    """Creates (or updates) topic on the broker at address broker with `queues` read and write
    queues, readable and writable, like `mqadmin updateTopic`."""
    with Connection(broker) as c:
        c.call(UPDATE_AND_CREATE_TOPIC, {
            "topic": topic,
            "defaultTopic": "TBW102",
            "readQueueNums": queues,
            "writeQueueNums": queues,
            "perm": 6,
            "topicFilterType": "SINGLE_TAG",
            "topicSysFlag": 0,
            "order": "false",
        })


def max_offsets(broker, topic, queues):
    """Per-queue max offsets (the number of messages each queue ever held)."""
    with Connection(broker) as c:
        return [int(c.call(GET_MAX_OFFSET, {"topic": topic, "queueId": q})[0]["extFields"]["offset"])
                for q in range(queues)]


def consumer_offsets(broker, group, topic, queues):
    """Per-queue committed offsets of a consumer group; None for a queue with no committed offset."""
    out = []
    with Connection(broker) as c:
        for q in range(queues):
            resp, _ = c.request(QUERY_CONSUMER_OFFSET, {
                "consumerGroup": group, "topic": topic, "queueId": q, "setZeroIfNotFound": "false"})
            out.append(int(resp["extFields"]["offset"]) if resp.get("code") == SUCCESS else None)
    return out
