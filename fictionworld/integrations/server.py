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
"""

from __future__ import annotations

import gc
import ipaddress
import os
import signal
import socket
import sys
import time

from fictionworld.env.service import WorldService
from fictionworld.executors import die_with_parent

__all__ = ["run_server", "bind"]

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

    app = create_app(service)  # built once, before the fork: each worker counts in its own copy of its stats
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
        code = _worker(service, app, sock, log_level, drain_s)
    except BaseException as exc:  # noqa: BLE001 (a worker must exit, never return into the parent's loop)
        _say(f"worker {index} failed: {exc}")
    finally:
        os._exit(code)


def _worker(service: WorldService, app, sock: socket.socket, log_level: str, drain_s: float) -> int:
    import uvicorn

    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    die_with_parent(signal.SIGTERM)  # no worker outlives the supervisor holding the port
    service.reopen_index()
    service.start_preload()  # (its own page tables: a fork does not copy those of shared file maps)
    config = uvicorn.Config(app, log_level=log_level, lifespan="off", access_log=False,
                            timeout_graceful_shutdown=drain_s, server_header=False)  # fmt: skip
    server = uvicorn.Server(config)
    original = server.handle_exit

    def handle_exit(sig, frame):  # /health says "draining" while in-flight requests finish
        app.state.stats.draining = True
        original(sig, frame)

    server.handle_exit = handle_exit
    server.run(sockets=[sock])
    return 0
