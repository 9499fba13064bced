"""What both ends of the discovery transport agree on beyond discovery.proto
(docs/contracts.md): the wire version a Subscribe carries and the gRPC message-size limits of
each direction (:mod:`.server`, :mod:`.client`)."""

from __future__ import annotations

from typing import Final

__all__ = ["CLIENT_GRPC_OPTIONS", "SERVER_GRPC_OPTIONS", "WIRE_VERSION"]

# Bumped on any incompatible change to discovery.proto's meaning (as xDS versions its API).
# Deltas did not bump it: they are opt-in (Subscribe.accept_deltas), so old proxies still get
# full Snapshots, and an old server ignores the flag and a new client takes its full Snapshots.
WIRE_VERSION: Final = 1

# gRPC's default receive limit is 4 MiB; a 10,000-route snapshot is already 2 MB, so snapshots
# (server to client) may be up to 256 MiB. What a client sends (Subscribe, Ack, Nack,
# NodeStatus) is small, and the client is the untrusted side: the server receives at most
# 4 MiB, so a client cannot make it buffer more.
_SNAPSHOT_LIMIT: Final = 256 * 1024 * 1024
_REPORT_LIMIT: Final = 4 * 1024 * 1024
# HTTP/2 flow control (RFC 9113 §6.9) on the snapshot's way: gRPC's C core starts a stream's
# receive window at 64 KiB and widens it only as its bandwidth-delay probe measures the link,
# so a 2 MB full Snapshot otherwise goes out a window at a time, each waiting for the client's
# WINDOW_UPDATE (100 proxies subscribing at once: delivery p99 up to 2.2 s, where 0.3 s with
# the window below; docs/benchmarks.md, "Discovery"). The client grants 4 MiB up front
# ("grpc.http2.lookahead_bytes"): it holds at most that per stream, its one stream. The
# server grants its clients the default: what they send is small.
_SNAPSHOT_WINDOW: Final = 4 * 1024 * 1024
# That probe is off at both ends ("grpc.http2.bdp_probe"): it sends a PING, answered by a PING
# ACK, as data arrives, so each version a stream gets and each Ack it sends cost both ends two
# more frames, each a system call and a pass through gRPC's transport. With the window granted
# up front the probe has nothing left to widen. Measured with 1,000 streams on one scope
# (bench/discovery_fleet.py): the server's CPU a change 298-324 ms with the probe, 195 ms
# without; the receivers' 323-355 against 161 (docs/benchmarks.md, "Discovery").
_NO_BDP_PROBE: Final = ("grpc.http2.bdp_probe", 0)
SERVER_GRPC_OPTIONS: Final = (
    ("grpc.max_send_message_length", _SNAPSHOT_LIMIT),
    ("grpc.max_receive_message_length", _REPORT_LIMIT),
    _NO_BDP_PROBE,
)
CLIENT_GRPC_OPTIONS: Final = (
    ("grpc.max_send_message_length", _REPORT_LIMIT),
    ("grpc.max_receive_message_length", _SNAPSHOT_LIMIT),
    ("grpc.http2.lookahead_bytes", _SNAPSHOT_WINDOW),
    _NO_BDP_PROBE,
)
