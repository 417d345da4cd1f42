"""A service's /metrics over HTTP, in threads of its own, bounded as listener_bounds says: a client has
METRICS_CLIENT_TIMEOUT_SECONDS for each read and write, and at most METRICS_MAX_CLIENTS are served at once (one more
is closed as it is accepted). prometheus_client's own server gives every client a thread with no timeout (a probe's
300 slow clients made 316 threads in ingest)."""

from __future__ import annotations

import socket
import sys
import threading
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import make_wsgi_app

from secondbrain.service.listener_bounds import METRICS_CLIENT_TIMEOUT_SECONDS, METRICS_MAX_CLIENTS


class _Handler(WSGIRequestHandler):
    timeout = METRICS_CLIENT_TIMEOUT_SECONDS

    def log_message(self, format: str, *args: Any) -> None:
        """Scrapes are not logged."""


class _BoundedServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True
    max_clients = METRICS_MAX_CLIENTS
    # The listen backlog (socketserver's default is 5): connections past it wait in the kernel, unseen, until it
    # has room, held open for as long as that takes instead of being closed at once.
    request_queue_size = 128

    def server_activate(self) -> None:
        super().server_activate()
        self._slots = threading.BoundedSemaphore(self.max_clients)

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that timed out or went away is no error of ours: the base prints a traceback for each.
        if not isinstance(sys.exc_info()[1], OSError):
            super().handle_error(request, client_address)


def start_metrics_http(host: str, port: int) -> int:
    """Serve /metrics on `host:port` (0: any free port) in a daemon thread; the port it got."""
    family, _, _, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]

    class Server(_BoundedServer):
        address_family = family

    server = make_server(address[0], port, make_wsgi_app(), Server, handler_class=_Handler)
    threading.Thread(target=server.serve_forever, name="metrics", daemon=True).start()
    return int(server.server_port)
