"""``fictionworld serve --ray-serve``: the same HTTP app (:func:`~fictionworld.integrations.http.create_app`)
as a Ray Serve deployment, ``replicas`` copies of it behind Serve's HTTP proxy.

>>> deploy("worlds/demo", replicas=2)       # on the Ray cluster this process joined  # doctest: +SKIP

Each replica opens the world itself, in its constructor, from ``directory`` (made absolute here:
every node must see it at that path, and have fictionworld installed), and serves it with the
app the plain server runs, built there: nothing of the app (routes, the request guard, its
counters) crosses the network, only the directory, the knobs and the limits, as plain dicts.
The app is handed to Serve as a builder (``serve.ingress(build)``, evaluated when a replica
starts): a FastAPI app given to ``serve.ingress`` at class definition is pickled into the class,
and a replica's constructor could not reach the copy that serves, to attach its world to it.

Serve adds nothing to the protocol: a request goes to the replica with the shortest queue
(Serve holds at most ``max_ongoing_requests`` at a replica, queueing the rest), and each replica
applies :class:`~fictionworld.env.service.Limits` as one worker of the plain server does (the
connection limits, ``header_timeout_s`` and ``max_connections``, are the proxy's business:
Serve's own). ``/metrics`` counts the replica that answered (its pid in ``fictionworld_process``).
Sessions that replay faults keep their call count in the replica that served them: clients
spread over replicas should send ``call`` (see the service), which needs no server state.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

from fictionworld.env.service import Limits
from fictionworld.knobs import Knobs

if TYPE_CHECKING:
    from ray.serve.handle import DeploymentHandle

__all__ = ["application", "deploy", "run_ray_serve"]

MIN_RAY = (2, 47)  # serve.ingress takes an app builder evaluated in the replica (ray-project/ray#52892)
NAME = "fictionworld"  # the Serve application's name
_QUIET = {"log_level": "WARNING", "enable_access_log": False}  # Serve logs every request at INFO otherwise


def _say(message: str) -> None:
    print(f"fictionworld serve: {message}", file=sys.stderr, flush=True)


def _builder(directory: str, knobs: dict | None, limits: dict | None, preload: bool = False):
    """The function a replica calls, once, to build its app: opens the world (warm) and serves it."""

    def build():
        from fictionworld.env.service import Limits, WorldService
        from fictionworld.integrations.http import create_app
        from fictionworld.knobs import Knobs

        lim = Limits(**limits) if limits is not None else None
        service = WorldService.open(directory, knobs=Knobs(**knobs) if knobs is not None else None, limits=lim,
                                    preload=preload)  # fmt: skip
        service.start_preload()
        return create_app(service, limits=lim)

    return build


def application(directory: str | Path, *, replicas: int = 2, knobs: Knobs | None = None,
                limits: Limits | None = None, num_cpus: float | None = None, preload: bool = False):  # fmt: skip
    """The Serve application (``Deployment.bind()``): ``replicas`` replicas of the world's app,
    each reserving ``num_cpus`` (default: one core each where the cluster has them, a share of
    its cores otherwise; ``preload``: see :meth:`WorldService.start_preload`). Needs Ray to be
    initialised when ``num_cpus`` is None."""
    import ray
    from ray import serve

    if tuple(int(x) for x in ray.__version__.split(".")[:2]) < MIN_RAY:
        raise RuntimeError(f"fictionworld on Ray Serve needs ray[serve]>={'.'.join(map(str, MIN_RAY))}, "
                           f"not {ray.__version__}")  # fmt: skip
    if num_cpus is None:
        cores = float(ray.cluster_resources().get("CPU", 1.0))
        num_cpus = min(1.0, cores / replicas)
    build = _builder(str(Path(directory).resolve()), knobs.model_dump(mode="json") if knobs is not None else None,
                     limits.model_dump(mode="json") if limits is not None else None, preload)  # fmt: skip
    ingress = serve.ingress(build)()
    # A replica takes as many requests as a worker of the plain server holds (its guard answers
    # the rest 503); Serve's proxy queues a bounded number more (Serve's own 503 beyond), not
    # without limit as its defaults would.
    in_flight = (limits or Limits()).max_in_flight
    return serve.deployment(ingress, name="FictionWorld", num_replicas=replicas,
                            ray_actor_options={"num_cpus": num_cpus}, max_ongoing_requests=in_flight,
                            max_queued_requests=replicas * in_flight).bind()  # fmt: skip


def deploy(directory: str | Path, *, replicas: int = 2, knobs: Knobs | None = None, limits: Limits | None = None,
           name: str = NAME, route_prefix: str = "/", num_cpus: float | None = None,
           preload: bool = False) -> DeploymentHandle:  # fmt: skip
    """Deploys the world on the Ray cluster this process has joined (Serve starts with its
    defaults if it is not running: call ``serve.start`` first to choose the proxy's address) and
    returns once every replica has opened it. Does not block beyond that."""
    from ray import serve

    app = application(directory, replicas=replicas, knobs=knobs, limits=limits, num_cpus=num_cpus, preload=preload)
    return serve.run(app, blocking=False, name=name, route_prefix=route_prefix, logging_config=_QUIET)


def run_ray_serve(directory: str | Path, *, host: str = "127.0.0.1", port: int = 8000, replicas: int = 2,
                  address: str | None = None, knobs: Knobs | None = None, limits: Limits | None = None,
                  preload: bool = False) -> int:  # fmt: skip
    """Joins Ray (``address`` None: a local cluster started here, without a dashboard;
    ``"auto"``: the running one), starts Serve's proxy on ``host:port`` (port 0: a free one),
    deploys the world and serves it until SIGTERM or SIGINT; then removes what it started: the
    application, Serve if it was not running, the cluster if it started it. Returns the exit
    code (0: stopped on request; 1: the deployment failed)."""
    import logging

    import ray
    from ray import serve

    logging.getLogger("ray.serve").setLevel(logging.WARNING)  # this process's Serve lines; ours say it
    stop = threading.Event()
    ready = False

    def on_signal(signum, frame):
        stop.set()
        if not ready:  # still starting: stop waiting for it
            raise KeyboardInterrupt

    signals = (signal.SIGTERM, signal.SIGINT)
    previous = {s: signal.signal(s, on_signal) for s in signals}
    directory = Path(directory).resolve()
    started_ray = started_serve = False
    t0 = time.perf_counter()
    try:
        if port == 0:
            port = _free_port(host)
        os.environ.setdefault("RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO", "0")
        if not ray.is_initialized():
            ray.init(address=address or "local", logging_level="ERROR", log_to_driver=True,
                     **({} if address else {"include_dashboard": False}))  # fmt: skip
            started_ray = address is None
            for s in signals:  # ray.init put its own SIGTERM handlers in place of ours
                signal.signal(s, on_signal)
        started_serve = not _serve_running()
        serve.start(http_options={"host": host, "port": port}, logging_config=_QUIET)
        if not started_serve:
            host, port = _proxy_address(host, port)
        try:
            deploy(directory, replicas=replicas, knobs=knobs, limits=limits, preload=preload)
        except RuntimeError as exc:
            _say(f"cannot deploy {directory} on Ray Serve: {_why(exc)}")
            return 1
        ready = True
        shown = f"[{host}]" if ":" in host else host
        _say(f"http://{shown}:{port} serving {directory} on Ray Serve with {replicas} "
             f"replica{'s' * (replicas != 1)} (ready in {time.perf_counter() - t0:.1f} s); docs at /docs")  # fmt: skip
        while not stop.wait(1.0):
            pass
        _say("stopping: answering the requests in flight")
        return 0
    except KeyboardInterrupt:
        _say("stopped before it was ready")
        return 0
    finally:
        for s in signals:  # a second Ctrl-C must not cut the clean-up short
            signal.signal(s, signal.SIG_IGN)
        try:
            if ray.is_initialized():
                if started_serve and not started_ray:
                    serve.shutdown()
                else:  # drains the replicas; a cluster started here takes Serve down with it
                    serve.delete(NAME)
        finally:
            if started_ray:
                ray.shutdown()
            for s, handler in previous.items():
                signal.signal(s, handler)


def _serve_running() -> bool:
    import ray
    from ray.serve._private.constants import SERVE_CONTROLLER_NAME, SERVE_NAMESPACE

    try:
        ray.get_actor(SERVE_CONTROLLER_NAME, namespace=SERVE_NAMESPACE)
    except ValueError:
        return False
    return True


def _proxy_address(host: str, port: int) -> tuple[str, int]:
    """Where a Serve that was already running listens (its own options, not ours)."""
    try:
        from ray.serve.context import _get_global_client

        config = _get_global_client().http_config
        return config.host, config.port
    except Exception:  # noqa: BLE001 (a private API: the options asked for are the best guess)
        return host, port


def _why(exc: Exception) -> str:
    """The replica's own error (the last line of Serve's deployment message), else Serve's."""
    try:
        from ray import serve

        app = serve.status().applications.get(NAME)
        for d in app.deployments.values() if app is not None else ():
            lines = [x for x in (d.message or "").splitlines() if x.strip()]
            if lines:
                return lines[-1].strip()
    except Exception:  # noqa: BLE001
        pass
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def _free_port(host: str) -> int:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]
