"""rustfx.offload's own workers: started, sized and stopped by the Offload
(docs/scale.md, "Launchers").

    off = rustfx.offload(pipe, workers=rustfx.workers.Local(max_workers=4))
    off = rustfx.offload(pipe, workers=rustfx.workers.Ray(max_workers=16))
    model.fit(off.dataset(), epochs=10)
    off.close()      # or `with rustfx.offload(...) as off:`; also at exit

The Offload runs its tf.data service dispatcher in its own process and a
launcher (`_Pool`) beside it, whose thread polls the workers every
POLL_SECONDS: a worker that died (its process exited, its actor or node
lost) is replaced at once, and the count follows the target the
autoscaler sets at each governor window (rustfx.offload_autoscaler, whose
doc holds the rules; min_workers == max_workers: a fixed count).

- Local: worker processes on this machine (`python -m
  rustfx._worker_process`), each a tf.data service WorkerServer. Each has
  a watchdog (its stdin from the launcher closing, or its parent pid
  changing), so a trainer killed with -9 leaves none behind.
- Ray: actors (owned by the trainer, not detached), each a WorkerServer
  on its node's IP, placed by Ray's resources (num_cpus=cpus_per_worker,
  fractional allowed; SPREAD over the nodes); `ray.kill`ed at close, and
  killed by Ray when their owner, the trainer, dies. No free CPU: the
  epoch runs locally, and the reason is warned once and in
  report["workers_error"].

Start-up: importing TensorFlow takes seconds, so while fewer than
max_workers serve, one more process is kept warm (setup run, TensorFlow
imported, not registered with the dispatcher: it takes no task and no
CPU). An added worker is that one and serves within a second; the next
warm one starts behind it. The first is started when the Offload is made.

`setup` (a picklable callable, e.g. a module-level function; pickled with
cloudpickle when it is installed) runs in each worker process before its
server starts (after TensorFlow is imported): the bench puts the process
in a CPU-quota cgroup with it.
"""

import os
import pickle
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import warnings
import weakref

from rustfx.offload_autoscaler import Autoscaler

__all__ = ["Local", "Ray"]

POLL_SECONDS = 0.5
# A worker asked to serve that does not within this long (a Ray actor that
# cannot be placed after all, a process stuck importing) is stopped and
# another tried.
START_SECONDS = 120.0
# Workers that died before serving, in a row, before no more are started
# (a `setup` that raises, a worker that cannot import rustfx).
START_FAILURES = 3
HEARTBEAT_MS = 500
# How long the dispatcher keeps a silent worker: a dead one's tasks go
# nowhere meanwhile (FIELD_NOTES: TF 2.21 keeps handing them out).
WORKER_TIMEOUT_MS = 3000
# How long close waits for its stopped workers to be gone: ray.kill only
# asks, and an actor asked at once after it could still answer (a CI run
# under load saw one answer after close had returned).
STOP_SECONDS = 15.0


def _pickled(setup):
    if setup is None:
        return b""
    if not callable(setup):
        raise ValueError(f"setup must be a callable or None, got {type(setup).__name__}")
    try:
        import cloudpickle
    except ImportError:
        return pickle.dumps(setup)
    # By value when its module is the user's own (a script, a test, a bench:
    # not installed where a Ray worker would find it); by reference otherwise.
    module = sys.modules.get(getattr(setup, "__module__", None) or "")
    where = getattr(module, "__file__", None) or ""
    own = module is not None and module.__name__ != "__main__" and "-packages" not in where \
        and not module.__name__.startswith("rustfx")
    if own:
        cloudpickle.register_pickle_by_value(module)
        try:
            return cloudpickle.dumps(setup)
        except Exception:  # noqa: BLE001 - something of it only goes by reference
            pass
        finally:
            cloudpickle.unregister_pickle_by_value(module)
    return cloudpickle.dumps(setup)


def _counts(max_workers, min_workers):
    if max_workers is not None and (isinstance(max_workers, bool) or int(max_workers) < 1):
        raise ValueError(f"max_workers must be >= 1 or None, got {max_workers!r}")
    if int(min_workers) < 0 or (max_workers is not None and int(min_workers) > int(max_workers)):
        raise ValueError(f"min_workers must be from 0 to max_workers, got {min_workers!r}")
    return None if max_workers is None else int(max_workers), int(min_workers)


class Local:
    """Worker processes on this machine: at most `max_workers` (None:
    os.cpu_count()), at least `min_workers`; `setup` runs in each."""

    def __init__(self, max_workers=None, *, min_workers=0, setup=None):
        max_workers, self.min_workers = _counts(max_workers, min_workers)
        self.max_workers = max_workers or os.cpu_count() or 1
        if self.min_workers > self.max_workers:
            raise ValueError(f"min_workers ({self.min_workers}) above max_workers "
                             f"({self.max_workers})")
        self.setup = setup
        self._setup_bytes = _pickled(setup)

    def __repr__(self):
        return f"Local(max_workers={self.max_workers}, min_workers={self.min_workers})"

    # -- what the pool asks of a launcher -----------------------------------

    def _connect(self):
        """The host the workers reach the dispatcher at; None: no error."""
        self._log_dir = tempfile.mkdtemp(prefix="rustfx-workers-")
        return "localhost", None

    def _room(self, unplaced):
        return self.max_workers

    def _spawn(self, dispatcher_address, number):
        return _LocalWorker(dispatcher_address, self._setup_bytes,
                            os.path.join(self._log_dir, f"worker-{number}.log"))

    def _closed(self):
        shutil.rmtree(self._log_dir, ignore_errors=True)


class Ray:
    """rustfx-worker servers as Ray actors wherever the cluster has free
    CPUs: at most `max_workers` (None: the cluster's CPUs over
    cpus_per_worker), at least `min_workers`, each holding
    `cpus_per_worker` CPUs (fractional allowed). `address`: None joins the
    Ray this process initialised, or calls ray.init(); else ray.init(address)."""

    def __init__(self, max_workers=None, *, cpus_per_worker=1, min_workers=0, address=None,
                 setup=None):
        self.max_workers, self.min_workers = _counts(max_workers, min_workers)
        if isinstance(cpus_per_worker, bool) or not float(cpus_per_worker) > 0:
            raise ValueError(f"cpus_per_worker must be > 0, got {cpus_per_worker!r}")
        self.cpus_per_worker = float(cpus_per_worker)
        self.address, self.setup = address, setup
        self._setup_bytes = _pickled(setup)

    def __repr__(self):
        return (f"Ray(max_workers={self.max_workers}, cpus_per_worker={self.cpus_per_worker}, "
                f"min_workers={self.min_workers})")

    def _connect(self):
        import ray

        if not ray.is_initialized():
            ray.init(address=self.address, include_dashboard=False, log_to_driver=False)
        nodes = [n for n in ray.nodes() if n.get("Alive")]
        biggest = max((n["Resources"].get("CPU", 0) for n in nodes), default=0)
        if self.max_workers is None:
            total = ray.cluster_resources().get("CPU", 0)
            self.max_workers = max(1, int(total // self.cpus_per_worker + 1e-9))
        self.min_workers = min(self.min_workers, self.max_workers)
        self._actor_class = ray.remote(_RayWorkerActor)
        error = None
        if self.cpus_per_worker > biggest:
            error = (f"no Ray node has {self.cpus_per_worker:g} CPUs (cpus_per_worker; the "
                     f"largest has {biggest:g}): no worker can start")
        return ray.util.get_node_ip_address(), error

    def _room(self, unplaced):
        free = _ray().available_resources().get("CPU", 0)
        return max(0, int(free // self.cpus_per_worker + 1e-9) - unplaced)

    def _spawn(self, dispatcher_address, number):
        return _RayWorker(self._actor_class, self._setup_bytes, self.cpus_per_worker)

    def _closed(self):
        pass


# -- one worker ---------------------------------------------------------------

class _LocalWorker:
    """A worker process (rustfx._worker_process): starting, then warm, then
    serving once activated."""

    def __init__(self, dispatcher_address, setup_bytes, log_path):
        # This process's sys.path: what it imports, the worker imports (rustfx
        # and whatever `setup` needs).
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
        self.log_path = log_path
        with open(log_path, "wb") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "rustfx._worker_process", dispatcher_address,
                 str(os.getpid())], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=log, env=env)
        self.pid = self.process.pid
        self.activated, self.state = False, "starting"
        try:
            self.process.stdin.write(len(setup_bytes).to_bytes(8, "little") + setup_bytes)
            self.process.stdin.flush()
        except OSError:
            pass  # it died at once: dead() says so
        threading.Thread(target=self._read, daemon=True, name="rustfx-worker-reader").start()

    def _read(self):
        for line in self.process.stdout:
            word = line.split(b" ", 1)[0].strip()
            if word in (b"warm", b"serving"):
                self.state = word.decode()

    def placed(self):
        return True

    def activate(self):
        self.activated = True
        try:
            self.process.stdin.write(b"serve\n")
            self.process.stdin.flush()
        except OSError:
            pass

    def serving(self):
        return self.state == "serving"

    def dead(self):
        return self.process.poll() is not None

    def why(self):
        """The end of its log: why it died."""
        try:
            with open(self.log_path, "rb") as log:
                return log.read()[-400:].decode(errors="replace").strip()
        except OSError:
            return ""

    def stop(self):
        self.process.kill()
        self.process.wait()
        for pipe in (self.process.stdin, self.process.stdout):
            try:
                pipe.close()
            except OSError:
                pass

    def gone(self, timeout):
        return True  # stop() waited for the process


class _RayWorkerActor:
    """A Ray actor holding one tf.data service worker (made a Ray actor
    class by Ray._connect; threaded: `live` blocks while the others run)."""

    def __init__(self, setup_bytes):
        import threading as _threading

        # TensorFlow and the ops first, then setup, as in a Local worker: a
        # setup that holds the process to a CPU quota would otherwise slow
        # the import (a 25% quota: over 30 s to serve, measured).
        from rustfx import service  # noqa: F401
        if setup_bytes:
            pickle.loads(setup_bytes)()
        self.server, self.stopping = None, _threading.Event()

    def info(self):
        import ray

        return ray.get_runtime_context().get_node_id(), os.getpid()

    def serve(self, dispatcher_address):
        import ray
        from rustfx import service
        from rustfx._tf_internals import bound_port

        ip = ray.util.get_node_ip_address()
        self.server = service.start_worker(dispatcher_address, worker_address=f"{ip}:%port%",
                                           heartbeat_interval_ms=HEARTBEAT_MS)
        return bound_port(self.server)

    def live(self):
        """Returns only when stopped: its result resolving tells the actor died."""
        self.stopping.wait()


class _RayWorker:
    def __init__(self, actor_class, setup_bytes, cpus):
        self.actor = actor_class.options(
            num_cpus=cpus, max_restarts=0, max_concurrency=4,
            scheduling_strategy="SPREAD").remote(setup_bytes)
        self.life = self.actor.live.remote()
        self.info_ref, self.serve_ref = self.actor.info.remote(), None
        self.activated, self.pid, self.node, self._serving, self._why = False, None, None, False, ""

    def _done(self, ref):
        return bool(_ray().wait([ref], timeout=0)[0])

    def placed(self):
        if self.pid is None and self._done(self.info_ref):
            try:
                self.node, self.pid = _ray().get(self.info_ref)
            except Exception as error:  # noqa: BLE001 - a dead actor: dead() says so
                self._why = str(error)
                return True
        return self.pid is not None

    def activate(self):
        self.activated = True
        self.serve_ref = self.actor.serve.remote(self._address)

    def serving(self):
        if not self._serving and self.serve_ref is not None and self._done(self.serve_ref):
            try:
                _ray().get(self.serve_ref)
                self._serving = True
            except Exception as error:  # noqa: BLE001
                self._why = str(error)
        return self._serving

    def dead(self):
        return self._done(self.life)

    def why(self):
        return self._why[-400:]

    def stop(self):
        _ray().kill(self.actor, no_restart=True)

    def gone(self, timeout):
        """Whether the actor is gone within `timeout` s: `live` resolves
        (with RayActorError) only once its process has died."""
        return bool(_ray().wait([self.life], timeout=timeout)[0])


def _ray():
    """Ray, imported where used: rustfx.workers loads without it (rustfx[ray])."""
    import ray

    return ray


# -- the pool: the workers of one Offload -------------------------------------

class _Pool:
    """The workers of one Offload: started at construction (min_workers, and
    one warm), then sized to `set_target`, each death replaced; a thread
    polls every POLL_SECONDS. The count serving over time is `timeline`
    ([(perf_counter seconds, count)], one entry per change)."""

    def __init__(self, launcher, dispatcher_port):
        self.launcher = launcher
        host, self.error = launcher._connect()
        self.blocked = self.error is not None  # no worker can ever start
        self.dispatcher_address = f"{host}:{dispatcher_port}"
        self.max_workers = launcher.max_workers
        self.target = launcher.min_workers if launcher.min_workers < self.max_workers \
            else self.max_workers
        self.handles, self.numbered = [], 0
        self.autoscaler = Autoscaler(launcher.min_workers, self.max_workers)
        self.ready, self.seen_ready, self.timeline = 0, 0, [(time.perf_counter(), 0)]
        self.started = self.replaced = self.lost = self.failed_starts = 0
        self._warned, self.in_epoch = False, False
        self.lock, self.closing = threading.Lock(), threading.Event()
        with self.lock:
            self._step()
        self.thread = threading.Thread(target=self._run, daemon=True, name="rustfx-workers")
        self.thread.start()
        # At close, or at exit (finalize's atexit): its own thread keeps it alive till close.
        self._finalizer = weakref.finalize(self, _Pool._stop_all, self.handles, self.launcher)

    def _run(self):
        while not self.closing.wait(POLL_SECONDS):
            with self.lock:
                if not self.closing.is_set():
                    self._step()

    def epoch(self, running):
        """An epoch starts (True) or ends (False); workers are stopped only
        between epochs."""
        with self.lock:
            self.in_epoch = running
            if not running and not self.closing.is_set():
                self._step()

    def set_target(self, count):
        with self.lock:
            self.target = max(0, min(int(count), self.max_workers))
            if not self.closing.is_set():
                self._step()

    def window(self, governor, idle):
        """A governor window closed (its figures in governor.last_work,
        last_window, last_stalled, last_ramp and last_probe): the governor
        hears of a changed serving count and whether a count is being
        judged, and the autoscaler sets the target. `idle`: the workers'
        batches were not wanted."""
        ready = self.ready
        if ready != self.seen_ready:
            governor.workers_changed(more=ready > self.seen_ready)
            self.seen_ready = ready
        target = self.autoscaler.window(governor.last_work, governor.last_window[1],
                                        governor.last_stalled, idle, ready, self.most,
                                        ramp=governor.last_ramp, probe=governor.last_probe)
        governor.judging(self.autoscaler.trial is not None)  # one experiment at a time
        if target != self.target:
            self.set_target(target)

    def most(self):
        """How many could serve now: those serving and what the cluster
        can still place (its free CPUs), at most max_workers."""
        if self.blocked:
            return 0
        with self.lock:
            unplaced = sum(not h.placed() for h in self.handles)
            return min(self.max_workers, len(self.handles) + self.launcher._room(unplaced))

    def _fail(self, message):
        """Says once why the epoch runs locally (report["workers_error"]
        keeps the last reason)."""
        self.error = message
        if not self._warned:
            self._warned = True
            warnings.warn(f"rustfx.offload: {message}; the epoch runs locally",
                          RuntimeWarning, stacklevel=2)

    def _step(self):
        """Reaps the dead, matches the serving count to the target, keeps
        one warm; called with the lock held."""
        for handle in [h for h in self.handles if h.dead()]:
            self.handles.remove(handle)
            if handle.serving():
                self.lost += 1
                self.failed_starts = 0
            else:  # died before serving: after START_FAILURES in a row, no more
                self.failed_starts += 1
                self.blocked = self.failed_starts >= START_FAILURES
                self._fail(f"a worker died starting: {handle.why() or 'no reason given'}")
        if self.blocked and self.target:
            self._fail(self.error)
        late = [h for h in self.handles if h.activated and not h.serving()
                and time.monotonic() - h.activated_at > START_SECONDS]
        for handle in late:
            self.handles.remove(handle)
            handle.stop()
            self._fail(f"a worker did not serve within {START_SECONDS:.0f} s of being asked")
        serving = [h for h in self.handles if h.activated]
        # Fewer only between epochs: a worker stopped mid-job leaves its
        # task to TF's client, which then keeps retrying it (measured: an
        # epoch of 9 s took 184 s).
        while len(serving) > self.target and not self.in_epoch:
            handle = serving.pop()
            self.handles.remove(handle)
            handle.stop()
        if not self.blocked:
            while len(serving) < self.target:
                spare = next((h for h in self.handles if not h.activated), None)
                if spare is None:
                    spare = self._spawn()
                    if spare is None:
                        break
                spare.activate()
                spare.activated_at = time.monotonic()
                serving.append(spare)
                self.started += 1
                if self.lost > self.replaced:
                    self.replaced += 1
            if (len(self.handles) < self.max_workers and len(serving) < self.max_workers
                    and not any(not h.activated for h in self.handles)):
                self._spawn(quiet=True)
        ready = sum(h.serving() for h in serving)
        if ready != self.ready:
            self.ready = ready
            self.timeline.append((time.perf_counter(), ready))

    def _spawn(self, quiet=False):
        unplaced = sum(not h.placed() for h in self.handles)
        if len(self.handles) >= self.max_workers or self.launcher._room(unplaced) < 1:
            if not quiet and not any(h.activated for h in self.handles):
                self._fail(f"no free CPU for a worker ({self.launcher!r})")
            return None
        self.numbered += 1
        handle = self.launcher._spawn(self.dispatcher_address, self.numbered)
        handle._address = self.dispatcher_address
        self.handles.append(handle)
        return handle

    def summary(self, since):
        """The report's worker figures for the time from `since` (perf_counter)."""
        now = time.perf_counter()
        with self.lock:
            timeline = list(self.timeline)
        before = [c for t, c in timeline if t <= since]
        points = [(0.0, before[-1] if before else 0)]
        points += [(t - since, c) for t, c in timeline if t > since and t <= now]
        span = max(now - since, 1e-9)
        # Only changes up to `now` (the pool's thread may record one after
        # the clock was read), summed over unrounded times (a change in the
        # last half millisecond, rounded past `span`): either made -0.00.
        area = sum(c * ((points[i + 1][0] if i + 1 < len(points) else span) - t)
                   for i, (t, c) in enumerate(points))
        return {"workers": [(round(t, 3), c) for t, c in points], "workers_mean": area / span,
                "workers_max": max(c for _, c in points), "workers_started": self.started,
                "workers_replaced": self.replaced, "workers_error": self.error}

    def close(self):
        self.closing.set()
        self.thread.join(5)
        with self.lock:
            self._finalizer()
            self.ready = 0
            self.timeline.append((time.perf_counter(), 0))

    @staticmethod
    def _stop_all(handles, launcher):
        """Stops every worker, then waits (STOP_SECONDS in all) until each
        is gone: when close returns, none runs."""
        deadline = time.monotonic() + STOP_SECONDS
        stopped = []
        for handle in list(handles):
            try:
                handle.stop()
                stopped.append(handle)
            except Exception:  # noqa: BLE001 - at exit, Ray may be gone already
                pass
        for handle in stopped:
            try:
                handle.gone(max(0.0, deadline - time.monotonic()))
            except Exception:  # noqa: BLE001
                pass
        handles.clear()
        launcher._closed()


def start_workers(launcher, dispatcher=None):
    """rustfx.offload's `workers=`: its dispatcher (in this process) and
    the pool of workers of `launcher` (Local or Ray)."""
    if dispatcher is not None:
        raise ValueError("offload takes workers= (rustfx starts them) or dispatcher= "
                         "(workers started by hand), not both")
    if not isinstance(launcher, (Local, Ray)):
        raise TypeError(f"workers must be rustfx.workers.Local(...) or rustfx.workers.Ray(...), "
                        f"not {type(launcher).__name__}")
    from rustfx import service
    from rustfx._tf_internals import bound_port

    server = service.start_dispatcher(port=0, worker_timeout_ms=WORKER_TIMEOUT_MS)
    return server, _Pool(launcher, bound_port(server))
