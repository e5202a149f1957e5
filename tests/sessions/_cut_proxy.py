"""A TCP proxy on 127.0.0.1 in front of the test PostgreSQL server that cuts a connection at
the worst moment for a client: right after the server received a `COMMIT`, before the client
hears that it committed (as a network failure or a server restart at that instant would).

`CutProxy(port)` forwards every connection to `127.0.0.1:port`; `arm(marker)` makes it cut
the first connection that sends `marker` (bytes of a statement or a parameter), at that
connection's next `COMMIT`: the `COMMIT` goes on to the server, the reply does not come back,
and both sockets close. `cuts` counts the cuts made.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time

__all__ = ["CutProxy"]

_State = dict[str, bool]
"""Per connection: "marked" (it sent the marker), "cut" (its replies stop)."""


class CutProxy:
    """See the module docstring; `dsn(dsn)` rewrites a DSN's port to the proxy's."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._marker: bytes | None = None
        self._lock = threading.Lock()
        self.cuts = 0
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def dsn(self, dsn: str) -> str:
        return dsn.replace(f":{self.target_port}/", f":{self.port}/")

    def arm(self, marker: bytes) -> None:
        with self._lock:
            self._marker = marker

    def close(self) -> None:
        self._closed = True
        self._listener.close()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            server = socket.create_connection(("127.0.0.1", self.target_port))
            state = {"marked": False, "cut": False}
            threading.Thread(
                target=self._upstream, args=(client, server, state), daemon=True
            ).start()
            threading.Thread(
                target=self._downstream, args=(server, client, state), daemon=True
            ).start()

    def _upstream(
        self, client: socket.socket, server: socket.socket, state: dict[str, bool]
    ) -> None:
        with client, server:
            while True:
                try:
                    data = client.recv(65536)
                except OSError:
                    return
                if not data:
                    return
                with self._lock:
                    if self._marker is not None and self._marker in data:
                        state["marked"], self._marker = True, None
                cut = state["marked"] and b"COMMIT" in data
                if cut:
                    state["cut"] = True  # the reply stops here
                try:
                    server.sendall(data)
                except OSError:
                    return
                if cut:
                    time.sleep(0.3)  # the server commits
                    self.cuts += 1
                    for sock in (client, server):
                        with contextlib.suppress(OSError):
                            sock.shutdown(socket.SHUT_RDWR)
                    return

    def _downstream(
        self, server: socket.socket, client: socket.socket, state: dict[str, bool]
    ) -> None:
        while True:
            try:
                data = server.recv(65536)
            except OSError:
                return
            if not data or state["cut"]:
                return
            try:
                client.sendall(data)
            except OSError:
                return
