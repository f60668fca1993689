"""Where a sharded build's tasks run: forked local processes or Ray tasks, behind one small
interface (``start`` with side tasks and a hook, ``submit``, ``wait``, ``result``, ``stop``)."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

__all__ = ["LocalTasks", "RayTasks", "POOL_RESTARTS"]

POOL_RESTARTS = 3  # a local worker killed mid-shard: start the pool again at most this often (Ray: task retries)


class LocalTasks:
    """Tasks in forked local processes, which inherit the world (and the renderer) instead of
    reading them again; ``workers=1`` runs them in this process. ``side`` tasks (saving and
    checking the graph) go to one extra process forked first, so that this process can build
    the renderer meanwhile and the render workers start with it."""

    def __init__(self, workers: int):
        self.workers = workers
        self.pool: ProcessPoolExecutor | None = None
        self.side: ProcessPoolExecutor | None = None

    def start(self, side: list, prepare: Callable[[], None]) -> list:
        if self.workers == 1:
            futures = [self._now(fn, *args) for fn, *args in side]
            prepare()
            return futures
        import gc
        import multiprocessing as mp

        fork = mp.get_context("fork")
        # The workers share this process's pages until they write to them; a frozen heap
        # keeps their cyclic GC from touching (and so copying) all of it.
        gc.collect()
        gc.freeze()
        futures = []
        if side:
            self.side = ProcessPoolExecutor(1, mp_context=fork)
            futures = [self.side.submit(fn, *args) for fn, *args in side]  # forks it now
        prepare()
        gc.collect()
        gc.freeze()
        self.pool = ProcessPoolExecutor(self.workers, mp_context=fork)
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
        return f.result()

    def stop(self) -> None:
        import gc

        for pool in (self.side, self.pool):
            if pool is not None:
                pool.shutdown(wait=True, cancel_futures=True)
        self.pool = self.side = None
        gc.unfreeze()


class RayTasks:
    """Tasks on a Ray cluster (``address`` as ``ray.init`` takes it; None starts a local one).
    Workers load the graph from the shared output directory; Ray retries a task whose worker died."""

    def __init__(self, address: str | None, workers: int | None):
        self.address, self.workers = address, workers
        self._fns: dict = {}

    def start(self, side: list, prepare: Callable[[], None]) -> list:
        import ray

        if not ray.is_initialized():
            kw = {"address": self.address} if self.address else {"num_cpus": self.workers}
            ray.init(log_to_driver=False, include_dashboard=False, **kw)
        return [self.submit(fn, *args) for fn, *args in side]

    def submit(self, fn, *args):
        import ray

        remote = self._fns.get(fn)
        if remote is None:
            remote = self._fns[fn] = ray.remote(num_cpus=1, max_retries=POOL_RESTARTS)(fn)
        return remote.remote(*args)

    def wait(self, pending):
        import ray

        done, _ = ray.wait(list(pending), num_returns=1)
        return done

    def result(self, f):
        import ray

        return ray.get(f)

    def stop(self) -> None:
        pass
