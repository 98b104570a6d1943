"""The worker's network: a namespace of its own, where only the loopback device exists, brought up.

A new network namespace has no route to anything outside it: no host or cluster port (Ray's included), no
abstract unix socket of another namespace (their names live per network namespace). Its own loopback lets a
solution's code talk to itself (a compiler server, a test socket) and to nothing else."""

from __future__ import annotations

import fcntl
import socket
import struct

#: ioctl(2) requests on a socket: read and write an interface's flags (struct ifreq: name, then flags).
SIOCGIFFLAGS = 0x8913
SIOCSIFFLAGS = 0x8914
IFF_UP = 0x1
LOOPBACK = b"lo"
IFREQ = "16sH14x"


def _bring_up_loopback() -> None:
    """Set IFF_UP on ``lo`` (needs CAP_NET_ADMIN in the namespace: done before the capabilities are dropped)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as handle:
        flags = struct.unpack(IFREQ, fcntl.ioctl(handle, SIOCGIFFLAGS, struct.pack(IFREQ, LOOPBACK, 0)))[1]
        fcntl.ioctl(handle, SIOCSIFFLAGS, struct.pack(IFREQ, LOOPBACK, flags | IFF_UP))
