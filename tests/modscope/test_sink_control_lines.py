"""The socket sink's control channel (viewer to training process): lines split in linear time,
a runaway line skipped rather than held in memory, the messages around it delivered."""

from __future__ import annotations

import socket
import threading
import time

from modscope import SocketSink
from modscope.events.sinks import MAX_CONTROL_BYTES


def test_control_lines_arrive_in_order_and_a_runaway_line_is_skipped(tmp_path):
    address = str(tmp_path / "viewer.sock")
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(address)
    server.listen(1)
    received: list[bytes] = []
    done = threading.Event()

    def on_control(line: bytes) -> None:
        received.append(line)
        if line == b'{"cmd":"last"}':
            done.set()

    sink = SocketSink(address, "token", on_control=on_control)
    conn, _ = server.accept()
    try:
        conn.recv(100)  # the hello
        start = time.perf_counter()
        conn.sendall(b'{"cmd":"pause"}\n{"cmd":')
        conn.sendall(b"x" * (4 * MAX_CONTROL_BYTES))  # before: re-split on every chunk, held whole
        conn.sendall(b'}\n{"cmd":"resume"}\n{"cmd":"last"}\n')
        assert done.wait(20)
        assert time.perf_counter() - start < 10
        assert received == [b'{"cmd":"pause"}', b'{"cmd":"resume"}', b'{"cmd":"last"}']
    finally:
        sink.close()
        conn.close()
        server.close()
