"""Where a sharded build's tasks run: forked local processes or Ray tasks, behind one small
interface (``alone``, ``start`` with side tasks, ``submit``, ``wait``, ``result``, ``stop``).

Ctrl-C is the driver's to handle, once: a terminal sends SIGINT to the whole process group, and
local workers ignore it (each would otherwise raise KeyboardInterrupt and print its own
traceback). On an interrupt the driver kills its local workers instead of waiting for their tasks
(``stop(now=True)``, and :meth:`LocalTasks.alone` by itself); what they had not finished is
made again when the build is resumed."""

from __future__ import annotations

import sys
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

__all__ = ["LocalTasks", "RayTasks", "POOL_RESTARTS", "POLL_S", "die_with_parent", "fetch", "forked_pool", "kill_pool",
           "node_name"]  # fmt: skip

POOL_RESTARTS = 3  # a local worker killed mid-shard: start the pool again at most this often (Ray: task retries)
POLL_S = 0.5  # how often :meth:`LocalTasks.alone` (and Ray's) asks its ``poll`` while the task runs
KILL_WAIT_S = 10.0  # at most this long for a killed worker to be gone


def die_with_parent(sig: int | None = None) -> None:
    """On Linux, ask for ``sig`` (default SIGKILL) when the process that forked this one dies,
    so a killed build leaves no worker rendering on as an orphan (elsewhere: nothing)."""
    import ctypes
    import signal

    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL if sig is None else sig)  # 1 = PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _forked() -> None:
    """Pool initializer: :func:`die_with_parent`, SIGINT ignored (the driver handles Ctrl-C,
    once, and stops this process), and the objects inherited from the parent kept out of this
    process's garbage collection (``gc.freeze``). A forked child must not free what its parent
    owns: a garbage cycle the parent had not collected yet would be collected here, running
    native destructors (a search index's, Ray's) against threads and locks that did not survive
    the fork; and a collection walking the whole inherited heap would write to, and so copy,
    every page of it."""
    import gc
    import signal

    die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    gc.freeze()


def forked_pool(workers: int) -> ProcessPoolExecutor:
    """``workers`` processes forked from this one, started by the first task submitted. The
    parent's garbage is collected first, here, where its destructors are safe to run."""
    import gc
    import multiprocessing as mp

    gc.collect()
    return ProcessPoolExecutor(workers, mp_context=mp.get_context("fork"), initializer=_forked)


def kill_pool(pool: ProcessPoolExecutor) -> None:
    """Stop ``pool`` now: its queued tasks cancelled and its processes killed, not waited for
    (their children die with them, :func:`die_with_parent`). For an interrupted build: a task
    that was cut off is made again when the build resumes. SIGINT is ignored meanwhile, so a
    second Ctrl-C cannot leave a worker alive for the interpreter's exit to wait on."""
    import signal
    import threading

    main = threading.current_thread() is threading.main_thread()
    before = signal.signal(signal.SIGINT, signal.SIG_IGN) if main else None
    try:
        # (the executor keeps its processes in a private mapping and nowhere else; 3.14 adds kill_workers)
        processes = list((getattr(pool, "_processes", None) or {}).values())
        for process in processes:
            try:
                process.kill()
            except (OSError, ValueError):  # gone already, or closed
                pass
        for process in processes:  # dead when this returns (a zombie at most, until reaped)
            process.join(timeout=KILL_WAIT_S)
        # its manager thread sees them dead and ends: waited for here, or the interpreter's exit
        # may wake it while it closes its pipe (an OSError traceback at exit on Python 3.11)
        pool.shutdown(wait=True, cancel_futures=True)
    finally:
        if main and before is not None:
            signal.signal(signal.SIGINT, before)


def node_name() -> str:
    """Where a task ran: the Ray node id inside a Ray worker, else ``local``. (A process that
    has not imported Ray is no Ray worker: a local worker does not pay for importing it.)"""
    ray = sys.modules.get("ray")
    try:
        if ray is not None and ray.is_initialized():
            return ray.get_runtime_context().get_node_id()
    except Exception:  # noqa: BLE001  (no Ray, or not in a Ray worker)
        pass
    return "local"


class SharedFile:
    """An object :meth:`LocalTasks.share` wrote for tasks to read: a pickle in a temporary file."""

    def __init__(self, path: str):
        self.path = path


_FETCHED: dict[str, object] = {}  # path -> object, the last few a worker read


def fetch(handle):
    """The object behind a handle from ``share`` (an object given as is, a :class:`SharedFile`
    read once per process, or a Ray object reference)."""
    if isinstance(handle, SharedFile):
        obj = _FETCHED.get(handle.path)
        if obj is None:
            import pickle

            with open(handle.path, "rb") as fh:
                obj = pickle.load(fh)
            if len(_FETCHED) >= 16:
                _FETCHED.pop(next(iter(_FETCHED)))
            _FETCHED[handle.path] = obj
        return obj
    if type(handle).__name__ == "ObjectRef":
        import ray

        return ray.get(handle)
    return handle


class LocalTasks:
    """Tasks in forked local processes; ``workers=1`` runs them in this process. ``side`` tasks
    (the lexicon and the checks, which read the whole graph) go to one extra process, let go
    as soon as they are done; :meth:`alone` runs one task in a process of its own, so that what
    it allocates goes back to the system when it ends."""

    def __init__(self, workers: int):
        self.workers = workers
        self.concurrent = workers > 1  # whether tasks run beside the driver (else in it, in turn)
        self.pool: ProcessPoolExecutor | None = None
        self.side: ProcessPoolExecutor | None = None
        self._side_futures: list = []
        self._shared: str | None = None  # temporary directory of shared objects

    def share(self, obj):
        """A handle tasks turn back into ``obj`` with :func:`fetch`: ``obj`` itself when tasks
        run in this process, else a file the workers read (they were forked before it existed)."""
        if self.pool is None:
            return obj
        import pickle
        import tempfile

        if self._shared is None:
            self._shared = tempfile.mkdtemp(prefix="fictionworld-shared-")
        fd, path = tempfile.mkstemp(dir=self._shared, suffix=".pkl")
        with open(fd, "wb") as fh:
            pickle.dump(obj, fh, protocol=pickle.HIGHEST_PROTOCOL)
        return SharedFile(path)

    def alone(self, fn, *args, poll=None):
        """``fn(*args)`` in a process of its own; ``poll()`` is called every :data:`POLL_S`
        seconds while it runs (e.g. to read the progress the task writes). Interrupted (Ctrl-C),
        the process is killed at once, not waited for."""
        one = forked_pool(1)
        try:
            future = one.submit(fn, *args)
            while not wait([future], timeout=POLL_S if poll else None).done:
                poll()
            return future.result()
        except KeyboardInterrupt:
            kill_pool(one)
            raise
        finally:
            one.shutdown(wait=True)  # (at once after kill_pool)

    def start(self, side: list) -> list:
        if self.workers == 1:
            return [self._now(fn, *args) for fn, *args in side]
        futures = []
        if side:
            self.side = forked_pool(1)
            futures = self._side_futures = [self.side.submit(fn, *args) for fn, *args in side]
        self.pool = forked_pool(self.workers)
        return futures

    @staticmethod
    def _now(fn, *args):
        from concurrent.futures import Future

        f: Future = Future()
        try:
            f.set_result(fn(*args))
        except BaseException as exc:  # noqa: BLE001  (handed to the caller through the future)
            f.set_exception(exc)
        return f

    def submit(self, fn, *args):
        return self._now(fn, *args) if self.pool is None else self.pool.submit(fn, *args)

    def wait(self, pending):
        done, _ = wait(pending, return_when=FIRST_COMPLETED)
        return done

    def result(self, f):
        value = f.result()
        if self.side is not None and all(s.done() for s in self._side_futures):
            self.side.shutdown(wait=True)  # its process held the whole graph: give it back now
            self.side = None
        return value

    def stop(self, now: bool = False) -> None:
        """Let the pools go: after their running tasks end, or ``now`` (an interrupt), with their
        processes killed (:func:`kill_pool`)."""
        for pool in (self.side, self.pool):
            if pool is not None:
                if now:
                    kill_pool(pool)
                else:
                    pool.shutdown(wait=True, cancel_futures=True)
        self.pool = self.side = None
        if self._shared is not None:
            import shutil

            shutil.rmtree(self._shared, ignore_errors=True)
            self._shared = None


class RayTasks:
    """Tasks on a Ray cluster (``address`` as ``ray.init`` takes it; None starts a local one).
    Workers load the graph from the shared output directory; Ray retries a task whose worker died."""

    concurrent = True

    def __init__(self, address: str | None, workers: int | None):
        self.address, self.workers = address, workers
        self._fns: dict = {}

    def _init(self) -> None:
        import ray

        if not ray.is_initialized():
            kw = {"address": self.address} if self.address else {"num_cpus": self.workers}
            ray.init(log_to_driver=False, include_dashboard=False, **kw)

    def alone(self, fn, *args, poll=None):
        import ray

        self._init()
        ref = self.submit(fn, *args)
        try:
            while poll is not None and not ray.wait([ref], timeout=POLL_S)[0]:
                poll()
            return self.result(ref)
        except KeyboardInterrupt:  # (on a cluster it would run on after this process is gone)
            ray.cancel(ref, force=True)
            raise

    def start(self, side: list) -> list:
        self._init()
        return [self.submit(fn, *args) for fn, *args in side]

    def share(self, obj):
        """A handle tasks turn back into ``obj`` with :func:`fetch` (Ray's object store)."""
        import ray

        self._init()
        return ray.put(obj)

    def submit(self, fn, *args):
        import ray

        remote = self._fns.get(fn)
        if remote is None:
            # SPREAD: a build's tasks are independent; spreading them spreads their memory and
            # disk traffic over the nodes (the default packs short tasks onto the driver's node)
            remote = self._fns[fn] = ray.remote(num_cpus=1, max_retries=POOL_RESTARTS, scheduling_strategy="SPREAD")(fn)
        return remote.remote(*args)

    def wait(self, pending):
        import ray

        done, _ = ray.wait(list(pending), num_returns=1)
        return done

    def result(self, f):
        import ray

        return ray.get(f)

    def stop(self, now: bool = False) -> None:
        pass
