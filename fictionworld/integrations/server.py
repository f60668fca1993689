"""``fictionworld serve``: the HTTP app on uvicorn, in worker processes that share one open world.

The world is opened (and its lookups built) once, in a supervisor process that then forks the
workers: what the workers read they share copy-on-write, and the pages and index are
memory-mapped files besides, so a second worker costs the pages it writes to, not a second
world (``benchmarks/bench_serve.py`` measures it). uvicorn's own ``--workers`` would start each
worker afresh (spawn) and open the world N times.

The supervisor never serves and starts no threads of its own after the fork; it

- binds before forking, one socket per worker on the one port (SO_REUSEPORT, so the kernel
  spreads connections evenly), so the port is taken, and connections queue, before any worker
  is ready: a client never sees "connection refused" while the world opens, and connections
  meant for a worker that died wait for its replacement on the same socket;
- forwards SIGTERM and SIGINT to the workers, which stop accepting, answer what they hold
  (uvicorn's graceful shutdown, at most ``drain_s``) and exit; the supervisor then exits 0;
- replaces a worker that dies (a crash, a SIGKILL), at most ``5 × workers`` times a minute.

Each worker runs uvicorn with :func:`guarded_protocol`, which adds what uvicorn lacks against
clients that hold connections open: a time limit on a request's headers, and a cap on the
connections a worker holds (below its open-file limit). The counters (``/metrics``) live in
memory the workers share: whichever worker answers shows the whole server's.
"""

from __future__ import annotations

import gc
import ipaddress
import json
import os
import signal
import socket
import sys
import time
from collections.abc import Callable
from http import HTTPStatus

from fictionworld.env.service import Limits, WorldService
from fictionworld.executors import die_with_parent

__all__ = ["run_server", "bind", "connection_cap", "guarded_protocol", "uvicorn_config"]

RESTARTS_PER_MINUTE = 5


def bind(host: str, port: int, *, reuse_port: bool = False) -> socket.socket:
    """A listening TCP socket on ``host:port`` (port 0: any free port); ``reuse_port`` lets
    several sockets of this user listen on one port, the kernel spreading connections evenly."""
    try:
        family = socket.AF_INET6 if ipaddress.ip_address(host).version == 6 else socket.AF_INET
    except ValueError:
        family = socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if reuse_port:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind((host, port))
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def _say(message: str) -> None:
    print(f"fictionworld serve: {message}", file=sys.stderr, flush=True)


def run_server(service: WorldService, *, host: str = "127.0.0.1", port: int = 8000, workers: int = 1,
               log_level: str = "warning", drain_s: float = 30.0) -> int:  # fmt: skip
    """Serves ``service`` until SIGTERM or SIGINT; returns the exit code (0: stopped cleanly).
    Raises OSError, saying which address, when it cannot listen."""
    try:
        sockets = _listen(host, port, workers)
    except OSError as exc:
        raise OSError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock = sockets[0]
    shown = f"[{host}]" if ":" in host else host
    w = service.web.world
    _say(f"http://{shown}:{sock.getsockname()[1]} serving {service.directory} (world {w.world_hash[:12]}, "
         f"{len(service.web.pages):,} pages) with {workers} worker{'s' * (workers != 1)}; docs at /docs")  # fmt: skip
    from fictionworld.integrations.http import create_app

    app = create_app(service, workers=workers)  # built once, before the fork; its counters are shared
    _settle()
    children: dict[int, int] = {}
    for i in range(workers):
        children[_fork(service, app, sockets[i], log_level, drain_s, i)] = i
    return _supervise(service, app, sockets, children, log_level, drain_s, workers)


def _listen(host: str, port: int, workers: int) -> list[socket.socket]:
    """One listening socket per worker on one port (SO_REUSEPORT: the kernel spreads new
    connections evenly over them; one shared socket lets whichever worker wakes first take
    most of them). A plain bind first, so a port another server holds is refused, not shared."""
    if workers == 1 or not hasattr(socket, "SO_REUSEPORT"):
        return [bind(host, port)] * workers
    probe = bind(host, port)
    port = probe.getsockname()[1]
    probe.close()
    return [bind(host, port, reuse_port=True) for _ in range(workers)]


def _settle() -> None:
    """Before forking: import what every worker runs (shared, not imported once per worker),
    give freed Arrow memory back, and move every object the workers will share out of the
    garbage collector's reach (a collection would write to each one, and copy its memory page
    into every worker)."""
    import importlib

    import uvicorn  # noqa: F401

    import fictionworld.integrations.http  # noqa: F401

    for name in ("uvloop", "httptools", "uvicorn.loops.uvloop", "uvicorn.protocols.http.httptools_impl",
                 "uvicorn.protocols.http.h11_impl", "uvicorn.lifespan.off"):  # fmt: skip
        try:
            importlib.import_module(name)
        except ImportError:
            pass
    try:
        import pyarrow as pa

        pa.default_memory_pool().release_unused()
    except (ImportError, AttributeError):
        pass
    gc.collect()
    gc.freeze()


def _supervise(service, app, sockets, children: dict[int, int], log_level: str, drain_s: float, workers: int) -> int:
    stopping = False
    restarts: list[float] = []

    def stop(signum, frame):
        nonlocal stopping
        if not stopping:
            _say("stopping: answering the requests in flight")
        stopping = True
        for pid in children:
            _kill(pid, signal.SIGTERM)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    code = 0
    while children:
        try:
            pid, status = os.waitpid(-1, 0)
        except ChildProcessError:
            break
        except InterruptedError:  # pragma: no cover (PEP 475 retries)
            continue
        index = children.pop(pid, None)
        if index is None or stopping:
            continue
        why = f"signal {-os.waitstatus_to_exitcode(status)}" if os.WIFSIGNALED(status) else \
            f"exit code {os.waitstatus_to_exitcode(status)}"  # fmt: skip
        now = time.monotonic()
        restarts = [t for t in restarts if now - t < 60] + [now]
        if len(restarts) > RESTARTS_PER_MINUTE * workers:
            _say(f"worker {index} died ({why}); too many restarts in a minute, stopping")
            stop(signal.SIGTERM, None)
            code = 1
            continue
        _say(f"worker {index} died ({why}); starting a new one")
        children[_fork(service, app, sockets[index], log_level, drain_s, index)] = index  # the socket it had
    for sock in set(sockets):
        sock.close()
    return code


def _kill(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def _fork(service: WorldService, app, sock: socket.socket, log_level: str, drain_s: float, index: int) -> int:
    pid = os.fork()
    if pid:
        return pid
    code = 1
    try:
        code = _worker(service, app, sock, log_level, drain_s, index)
    except BaseException as exc:  # noqa: BLE001 (a worker must exit, never return into the parent's loop)
        _say(f"worker {index} failed: {exc}")
    finally:
        os._exit(code)


def _worker(service: WorldService, app, sock: socket.socket, log_level: str, drain_s: float, index: int) -> int:
    import uvicorn

    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    die_with_parent(signal.SIGTERM)  # no worker outlives the supervisor holding the port
    app.state.stats.take_row(index)
    service.reopen_index()
    service.start_preload()  # (its own page tables: a fork does not copy those of shared file maps)
    config = uvicorn_config(app, service.limits, log_level=log_level, drain_s=drain_s, count=app.state.stats.reject)
    server = uvicorn.Server(config)
    original = server.handle_exit

    def handle_exit(sig, frame):  # /health says "draining" while in-flight requests finish
        app.state.stats.draining = True
        original(sig, frame)

    server.handle_exit = handle_exit
    server.run(sockets=[sock])
    return 0


def uvicorn_config(app, limits: Limits, *, log_level: str = "warning", drain_s: float | None = None,
                   lifespan: str = "off", count: Callable[[str], None] | None = None):  # fmt: skip
    """uvicorn's configuration for ``app``: quiet, and on :func:`guarded_protocol`."""
    import uvicorn

    return uvicorn.Config(app, log_level=log_level, lifespan=lifespan, access_log=False, server_header=False,
                          timeout_graceful_shutdown=drain_s, http=guarded_protocol(limits, count))  # fmt: skip


def connection_cap(wanted: int) -> int:
    """``wanted``, or fewer where the process may not open that many files (leaving 128 for the
    world's own): past the limit, accepting fails and every new client is reset."""
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    except (ImportError, OSError, ValueError):  # pragma: no cover (not POSIX)
        return wanted
    return wanted if soft == resource.RLIM_INFINITY else max(2, min(wanted, soft - 128))


def guarded_protocol(limits: Limits, count: Callable[[str], None] | None = None) -> type:
    """uvicorn's HTTP protocol (httptools, else h11: its ``auto``) with what it lacks against
    clients that hold connections open without finishing a request:

    - a request's headers must all arrive within ``limits.header_timeout_s`` of the connection
      opening or of the previous answer (else a JSON 408, and the connection is closed);
      uvicorn's own keep-alive limit only starts after an answer, and stops at the first byte;
    - a worker holds at most ``limits.max_connections`` connections (:func:`connection_cap`):
      one more closes the connection that has waited longest without a request in progress (an
      idle one, or one still sending headers); with every connection busy, the new one gets a
      JSON 503;
    - uvicorn's own 400 (a request that is not HTTP) is JSON ``{"error"}``, as every refusal is.

    ``count(reason)`` is told of each connection closed for ``header_timeout`` or ``connections``.
    """
    from uvicorn.protocols.http.auto import AutoHTTPProtocol

    header_s, cap = limits.header_timeout_s, connection_cap(limits.max_connections)

    class GuardedProtocol(AutoHTTPProtocol):
        _fw_timer = None
        _fw_since = 0.0
        _fw_cycle = None

        def connection_made(self, transport) -> None:
            super().connection_made(transport)
            self._fw_wait_for_headers()
            if len(self.connections) > cap and self._fw_open() > cap and not self._fw_make_room():
                if count is not None:
                    count("connections")
                self._fw_refuse(503, f"server busy: {cap:,} connections open, the most this worker holds; retry")

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing():
                self._fw_wait_for_headers()

        def connection_lost(self, exc) -> None:
            self._fw_stop_timer()
            super().connection_lost(exc)

        def send_400_response(self, msg: str) -> None:
            self._fw_refuse(400, f"{msg.rstrip('.')}: not a well-formed HTTP/1.1 request")

        def _fw_idle(self) -> bool:
            """No request of this connection's is being answered (nor queued behind one)."""
            return self.cycle is None or self.cycle.response_complete

        def _fw_wait_for_headers(self) -> None:
            self._fw_stop_timer()
            self._fw_since, self._fw_cycle = time.monotonic(), self.cycle
            self._fw_timer = self.loop.call_later(header_s, self._fw_expire)

        def _fw_stop_timer(self) -> None:
            if self._fw_timer is not None:
                self._fw_timer.cancel()
                self._fw_timer = None

        def _fw_expire(self) -> None:
            self._fw_timer = None
            if self.cycle is self._fw_cycle and self._fw_idle() and not self.transport.is_closing():
                if count is not None:
                    count("header_timeout")
                self._fw_refuse(408, f"request headers not received within {header_s:g} s")

        def _fw_open(self) -> int:
            return sum(not c.transport.is_closing() for c in self.connections)

        def _fw_make_room(self) -> bool:
            waiting = [c for c in self.connections if c is not self and isinstance(c, GuardedProtocol)
                       and c._fw_idle() and not c.transport.is_closing()]  # fmt: skip
            if not waiting:
                return False
            if count is not None:
                count("connections")
            min(waiting, key=lambda c: c._fw_since).transport.close()
            return True

        def _fw_refuse(self, status: int, message: str) -> None:
            body = json.dumps({"error": message}).encode()
            head = (f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\ncontent-type: application/json\r\n"
                    f"content-length: {len(body)}\r\nconnection: close\r\n"
                    + ("retry-after: 1\r\n" if status == 503 else "") + "\r\n")  # fmt: skip
            self._fw_stop_timer()
            self.transport.write(head.encode() + body)
            self.transport.close()

    return GuardedProtocol
