"""Wire format between the sandbox parent and its workers (standard library only).

Frames are a 4-byte big-endian length and UTF-8 JSON, both ways, on the call pipes. Between the
parent and the (trusted) zygote and child supervisors, messages are one JSON object per datagram
of a SOCK_SEQPACKET socket, with file descriptors passed alongside (SCM_RIGHTS). Never pickle: the worker runs
untrusted code, so everything it sends is parsed as data, bounded in size, and validated.
Output values travel as *tagged* JSON (`encode_plain`/`decode_plain`) so tuples, sets, bytes and
complex numbers come back as themselves without the parent parsing Python source.
"""

from __future__ import annotations

import array
import json
import math
import os
import select
import socket
import struct
import time
from typing import Any

MAX_FRAME = 8 << 20  # bytes; a worker that sends more is broken or hostile
_HEADER = struct.Struct(">I")


class ProtocolError(Exception):
    """The other side sent something that is not a valid frame."""


class FrameTimeout(Exception):
    """The deadline passed before a whole frame was sent or received."""


_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))  # built once: saves µs per frame


def encode_frame(message: dict) -> bytes:
    body = _ENCODER.encode(message).encode("utf-8", "surrogatepass")
    return _HEADER.pack(len(body)) + body


def decode_body(body: bytes) -> dict:
    try:
        message = json.loads(body.decode("utf-8", "surrogatepass"))
    except (ValueError, RecursionError) as exc:
        raise ProtocolError(f"bad frame: {exc}") from None
    if type(message) is not dict:
        raise ProtocolError("bad frame: not an object")
    return message


# ---------------------------------------------------------------- blocking side (worker)

def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


class BlockingReader:
    """Frames from a trusted peer on a blocking fd (one read per frame when it is small)."""

    def __init__(self, fd: int):
        self.fd = fd
        self.buf = b""

    def _need(self, n: int) -> bool:
        while len(self.buf) < n:
            chunk = os.read(self.fd, max(1 << 16, n - len(self.buf)))
            if not chunk:
                return False
            self.buf += chunk
        return True

    def read(self) -> dict | None:
        """Next frame, or None at end of file."""
        if not self._need(_HEADER.size):
            return None
        end = _HEADER.size + _HEADER.unpack_from(self.buf)[0]
        if not self._need(end):
            return None
        body, self.buf = self.buf[_HEADER.size:end], self.buf[end:]
        return decode_body(body)


# ---------------------------------------------------------------- deadline side (parent)

class FrameReader:
    """Reads frames from a non-blocking fd with a deadline; keeps leftover bytes between frames."""

    def __init__(self, fd: int):
        self.fd = fd
        self.buf = bytearray()
        os.set_blocking(fd, False)
        self.poller = select.poll()
        self.poller.register(fd, select.POLLIN | select.POLLHUP | select.POLLERR)

    def _fill(self, deadline: float) -> bool:
        """Read what is available, waiting until the deadline; False at end of file."""
        while True:
            try:
                chunk = os.read(self.fd, 1 << 16)
            except BlockingIOError:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise FrameTimeout from None
                self.poller.poll(max(1, math.ceil(left * 1000)))
                continue
            if not chunk:
                return False
            self.buf += chunk
            return True

    def read(self, deadline: float) -> dict | None:
        """Next frame, None at end of file; FrameTimeout or ProtocolError otherwise."""
        while len(self.buf) < _HEADER.size:
            if not self._fill(deadline):
                return None
        size = _HEADER.unpack_from(self.buf)[0]
        if size > MAX_FRAME:
            raise ProtocolError(f"frame of {size} bytes is over the limit")
        while len(self.buf) < _HEADER.size + size:
            if not self._fill(deadline):
                return None
        body = bytes(self.buf[_HEADER.size:_HEADER.size + size])
        del self.buf[:_HEADER.size + size]
        return decode_body(body)


def write_frame(fd: int, data: bytes, deadline: float) -> None:
    """Write a whole frame to a non-blocking fd before the deadline (FrameTimeout otherwise)."""
    view = memoryview(data)
    poller = None
    while view:
        try:
            view = view[os.write(fd, view):]
        except BlockingIOError:
            left = deadline - time.monotonic()
            if left <= 0:
                raise FrameTimeout from None
            if poller is None:
                poller = select.poll()
                poller.register(fd, select.POLLOUT | select.POLLERR)
            poller.poll(max(1, math.ceil(left * 1000)))


# ---------------------------------------------------------------- control sockets

MAX_MESSAGE = 1 << 16
_TRUNCATED = int(socket.MSG_CTRUNC | socket.MSG_TRUNC)  # plain ints: enum arithmetic per message costs µs
_RECV_FLAGS = int(socket.MSG_CMSG_CLOEXEC)
_SCM_RIGHTS = (int(socket.SOL_SOCKET), int(socket.SCM_RIGHTS))


def _wrap(fd: int) -> socket.socket:
    """A socket object on a control socket's fd (detach it after use). Its kind is given: from
    the fd alone, Python would ask the kernel with three syscalls per message."""
    return socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET, 0, fileno=fd)


def send_message(fd: int, message: dict, fds: list[int] = ()) -> None:
    """One message (and `fds`) on the SOCK_SEQPACKET socket `fd` (blocking)."""
    sock = _wrap(fd)
    try:
        ancillary = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))] if fds else []
        sock.sendmsg([_ENCODER.encode(message).encode("utf-8", "surrogatepass")], ancillary)
    finally:
        sock.detach()


def recv_message(fd: int, max_fds: int = 4, deadline: float | None = None) -> tuple[dict | None, list[int]]:
    """The next message on `fd` and the fds that came with it (close-on-exec); None at end of
    file. With a deadline, FrameTimeout when nothing came by then."""
    if deadline is not None:
        poller = select.poll()
        poller.register(fd, select.POLLIN | select.POLLHUP | select.POLLERR)
        while not poller.poll(max(0, math.ceil((deadline - time.monotonic()) * 1000))):
            if time.monotonic() >= deadline:
                raise FrameTimeout
    sock = _wrap(fd)
    try:
        data, ancillary, flags, _ = sock.recvmsg(MAX_MESSAGE, socket.CMSG_SPACE(max_fds * 4) if max_fds else 0,
                                                 _RECV_FLAGS)
    finally:
        sock.detach()
    fds: list[int] = []
    for level, kind, payload in ancillary:
        if (level, kind) == _SCM_RIGHTS:
            fds.extend(array.array("i", payload[: len(payload) - len(payload) % 4]))
    if flags & _TRUNCATED:
        for received in fds:
            os.close(received)
        raise ProtocolError("message or its file descriptors truncated")
    if not data:
        return None, fds
    return decode_body(data), fds


# ---------------------------------------------------------------- plain values

_PLAIN_NODES = 10_000
_PLAIN_CHARS = 100_000
_PLAIN_DEPTH = 50
_INT_BITS = 14_000


_TAGS = {list: "l", tuple: "t", set: "s", frozenset: "f"}
_KINDS = {tag: kind for kind, tag in _TAGS.items()}


class _NotPlain(Exception):
    pass


def encode_plain(value: object) -> Any:
    """Tagged JSON for a small value built only from literal types (exact types), else raise
    ValueError. Scalars are themselves; containers are [tag, payload]:
    l/t/s/f = list/tuple/set/frozenset items, d = [[key, value], ...], b = bytes hex, c = [real, imag]."""
    budget = [_PLAIN_NODES, _PLAIN_CHARS]

    def enc(v: object, depth: int) -> Any:
        budget[0] -= 1
        if budget[0] < 0 or depth > _PLAIN_DEPTH:
            raise _NotPlain
        t = type(v)
        if t is int:
            if v.bit_length() > _INT_BITS:
                raise _NotPlain
            return v
        if t is str:
            budget[1] -= len(v)
            if budget[1] < 0:
                raise _NotPlain
            return v
        if v is None or t is bool or t is float:
            return v
        tag = _TAGS.get(t)
        if tag is not None:
            return [tag, [enc(x, depth + 1) for x in v]]
        if t is dict:
            return ["d", [[enc(k, depth + 1), enc(x, depth + 1)] for k, x in v.items()]]
        if t is bytes:
            budget[1] -= 2 * len(v)
            if budget[1] < 0:
                raise _NotPlain
            return ["b", v.hex()]
        if t is complex:
            return ["c", [v.real, v.imag]]
        raise _NotPlain

    try:
        return enc(value, 0)
    except (_NotPlain, RecursionError):
        raise ValueError("not a small plain value") from None


def decode_plain(data: object) -> Any:
    """Inverse of `encode_plain`; raises ValueError on anything malformed."""

    def dec(v: object, depth: int) -> Any:
        t = type(v)
        if t is not list:
            if t is str or t is int or t is float or v is None or t is bool:
                return v
            raise ValueError("bad tagged value")
        if depth > _PLAIN_DEPTH or len(v) != 2:
            raise ValueError("bad tagged value")
        tag, payload = v
        kind = _KINDS.get(tag) if type(tag) is str else None
        if kind is not None and type(payload) is list:
            return kind([dec(x, depth + 1) for x in payload])
        if tag == "d" and type(payload) is list:
            out = {}
            for pair in payload:
                if type(pair) is not list or len(pair) != 2:
                    raise ValueError("bad dict item")
                out[dec(pair[0], depth + 1)] = dec(pair[1], depth + 1)
            return out
        if tag == "b" and type(payload) is str:
            return bytes.fromhex(payload)
        if tag == "c" and type(payload) is list and len(payload) == 2:
            return complex(float(payload[0]), float(payload[1]))
        raise ValueError(f"bad tagged value {str(tag)[:20]!r}")

    try:
        return dec(data, 0)
    except (TypeError, RecursionError) as exc:  # unhashable keys, deep nesting
        raise ValueError(str(exc)) from None
