"""Stand-ins for the outside world in sink tests: a viewer listening on a socket, and a user's
own sink that records, dawdles or fails."""

from __future__ import annotations

import json
import socket
import threading
import time


class FakeViewer:
    """Listens on a Unix socket in ``folder`` and keeps every byte one client sends."""

    def __init__(self, folder) -> None:
        self.address = str(folder / "viewer.sock")
        self._server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._server.bind(self.address)
        self._server.listen(1)
        self._chunks: list[bytes] = []
        self._thread = threading.Thread(target=self._accept)
        self._thread.start()

    def _accept(self) -> None:
        conn, _ = self._server.accept()
        with conn:
            while chunk := conn.recv(65536):
                self._chunks.append(chunk)

    def lines(self) -> list:
        """Everything received, as parsed JSON lines, once the client has hung up."""
        self._thread.join(timeout=10)
        self._server.close()
        return [json.loads(x) for x in b"".join(self._chunks).decode().splitlines()]


class RecordingSink:
    """A user's own sink with only the protocol's required methods (no ``write_many``); it can
    be slow (``delay`` seconds a write) or fail on events of one kind (``fail_on``, "*": all)."""

    def __init__(self, fail_on: str | None = None, delay: float = 0.0) -> None:
        self.events: list[dict] = []
        self.dropped, self.fail_on, self.delay, self.closed = 0, fail_on, delay, False

    def write(self, event: dict) -> None:
        if self.fail_on is not None and self.fail_on in ("*", event.get("kind")):
            raise OSError("disk full")
        time.sleep(self.delay)
        self.events.append(event)

    def flush(self) -> None:
        pass

    def close(self) -> None:
        self.closed = True
