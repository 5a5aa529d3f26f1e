"""A TCP proxy that a test can cut and restore: a partition between inspector processes
and one backend (database, DLM, queue), on 127.0.0.1 (a helper, not a test).

`cut()` closes the listening socket and every proxied connection, so the backend looks
down to the processes behind the proxy (connection refused, connections reset) while it
keeps serving every other test; `restore()` listens again on the same port.
"""

import contextlib
import select
import socket
import threading

#: Seconds between two looks at the stop flag of the proxy's threads.
TICK = 0.05


class TcpProxy:
    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self.port = _free_port()
        self._listener: socket.socket | None = None
        self._accepting: threading.Thread | None = None
        self._stop = threading.Event()
        self._guard = threading.Lock()
        self._sockets: set[socket.socket] = set()

    def __enter__(self) -> "TcpProxy":
        self.restore()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.cut()

    def restore(self) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        listener.settimeout(TICK)
        self._listener = listener
        self._stop = threading.Event()
        self._accepting = threading.Thread(target=self._accept, args=(listener, self._stop))
        self._accepting.daemon = True
        self._accepting.start()

    def cut(self) -> None:
        self._stop.set()
        if self._accepting is not None:
            self._accepting.join()
        if self._listener is not None:
            self._listener.close()
            self._listener = None
        with self._guard:
            sockets, self._sockets = self._sockets, set()
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def _accept(self, listener: socket.socket, stop: threading.Event) -> None:
        while not stop.is_set():
            try:
                client, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.target, timeout=5)
            except OSError:
                client.close()
                continue
            with self._guard:
                self._sockets.update((client, upstream))
            thread = threading.Thread(target=self._pipe, args=(client, upstream, stop))
            thread.daemon = True
            thread.start()

    def _pipe(self, one: socket.socket, other: socket.socket, stop: threading.Event) -> None:
        peers = {one: other, other: one}
        try:
            while not stop.is_set():
                readable, _, _ = select.select(list(peers), [], [], TICK)
                for sock in readable:
                    data = sock.recv(65536)
                    if not data:
                        return
                    peers[sock].sendall(data)
        except OSError:
            return
        finally:
            for sock in (one, other):
                with self._guard:
                    self._sockets.discard(sock)
                sock.close()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
