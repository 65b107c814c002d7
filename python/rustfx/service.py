"""tf.data service servers (TensorFlow's own) that can run rustfx ops.

When one machine cannot extract features as fast as the model trains, the
tf.data service runs the input pipeline on other machines: a dispatcher
hands out work, workers run the dataset graph, and the training process
reads the results. Both deserialize the dataset graph (the dispatcher to
split the source in "distributed_epoch" mode, the workers to run it), so
both must have the rustfx ops registered before they start; importing
rustfx does that, and so does this module.

    python -m rustfx.service dispatcher --port 5050 [--work-dir DIR]
    python -m rustfx.service worker --dispatcher HOST:5050 [--port 5051]
        [--worker-address THIS_HOST:5051]
    python -m rustfx.service --dispatcher HOST:5050     # the same as worker

Each runs until SIGTERM or SIGINT, then stops its server and exits 0. A
server whose stop does not return within STOP_SECONDS (a worker still
running a task of a job its client abandoned can block there, in TF's
C++) is left behind: the process exits anyway, with status 0. A worker
holds nothing that outlives it; a dispatcher's journal (--work-dir) is
written as it goes.
"""

import argparse
import os
import signal
import sys
import threading

import tensorflow as tf

import rustfx  # noqa: F401  (registers the ops in this process)
from rustfx._tf_internals import bound_port

service = tf.data.experimental.service

STOP_SECONDS = 10.0


# How soon a job no client reads any more is ended on the workers (TF's
# default: 5 minutes). rustfx.offload leaves each epoch's job when the
# epoch ends; left running, the workers kept extracting it beside the next
# epoch's job (measured: whole epochs of 7 s with no remote batch).
JOB_GC_MS = 1000


def start_dispatcher(port=0, work_dir=None, worker_timeout_ms=None):
    """Starts an in-process dispatcher with rustfx loaded. With `work_dir`
    it journals its state there (fault_tolerant_mode), so a dispatcher
    restarted with the same directory recovers its datasets and jobs. A
    job no client reads any more ends on the workers within about
    2 * JOB_GC_MS."""
    config = service.DispatcherConfig(
        port=port, work_dir=work_dir, fault_tolerant_mode=bool(work_dir),
        worker_timeout_ms=worker_timeout_ms, job_gc_check_interval_ms=JOB_GC_MS,
        job_gc_timeout_ms=JOB_GC_MS)
    return service.DispatchServer(config)


def start_worker(dispatcher_address, port=0, worker_address=None,
                 heartbeat_interval_ms=None):
    """Starts an in-process worker with rustfx loaded. `worker_address` is
    what the dispatcher tells clients to connect to (TF's default is
    "localhost:%port%", which only works on one machine)."""
    config = service.WorkerConfig(
        dispatcher_address=dispatcher_address, port=port,
        worker_address=worker_address,
        heartbeat_interval_ms=heartbeat_interval_ms)
    return service.WorkerServer(config)


def _parser():
    parser = argparse.ArgumentParser(
        prog="python -m rustfx.service", description=__doc__.splitlines()[0])
    roles = parser.add_subparsers(dest="role", required=True)

    dispatcher = roles.add_parser("dispatcher", help="hands out work")
    dispatcher.add_argument("--port", type=int, default=0,
                            help="port to listen on (0: any free port)")
    dispatcher.add_argument(
        "--work-dir", help="journal state here (fault-tolerant mode): a "
        "dispatcher restarted with the same directory recovers its jobs")
    dispatcher.add_argument(
        "--worker-timeout-ms", type=int,
        help="declare a worker dead after this long without a heartbeat "
        "(TF's default if not given)")

    worker = roles.add_parser("worker", help="runs the input pipeline")
    worker.add_argument("--dispatcher", required=True,
                        help="dispatcher address, HOST:PORT (no grpc://)")
    worker.add_argument("--port", type=int, default=0,
                        help="port to listen on (0: any free port)")
    worker.add_argument(
        "--worker-address", help="HOST:PORT clients use to reach this worker "
        "(default localhost:PORT: set it when clients run on other machines; "
        "%%port%% stands for the bound port)")
    worker.add_argument("--heartbeat-interval-ms", type=int,
                        help="how often to heartbeat to the dispatcher")
    return parser


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0].startswith("--") and argv[0] not in ("--help",):
        argv = ["worker", *argv]  # the original form: a worker
    args = _parser().parse_args(argv)

    # Handlers run on the main thread; it waits on an Event with a timeout
    # rather than in server.join(), which blocks in C++ and never returns to
    # Python to run them.
    stopping = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stopping.set())

    if args.role == "dispatcher":
        server = start_dispatcher(args.port, args.work_dir,
                                  args.worker_timeout_ms)
        print(f"rustfx tf.data service dispatcher started on port "
              f"{bound_port(server)}", flush=True)
    else:
        server = start_worker(args.dispatcher, args.port, args.worker_address,
                              args.heartbeat_interval_ms)
        print(f"rustfx tf.data service worker started on port "
              f"{bound_port(server)}, dispatcher {args.dispatcher}",
              flush=True)
    while not stopping.wait(0.5):
        pass
    if stop(server, STOP_SECONDS):
        print(f"rustfx tf.data service {args.role} stopped", flush=True)
        return 0
    print(f"rustfx tf.data service {args.role}: its server did not stop within "
          f"{STOP_SECONDS:.0f} s (a task of an abandoned job still running); exiting",
          flush=True)
    os._exit(0)  # the server's threads would keep a normal exit waiting


def stop(server, seconds):
    """Stops `server` in another thread; False if that did not return
    within `seconds`."""
    stopper = threading.Thread(target=server.stop, daemon=True)
    stopper.start()
    stopper.join(seconds)
    return not stopper.is_alive()


def worker_main(argv=None):
    """`rustfx-worker --dispatcher HOST:PORT [...]`: a worker, the same as
    `python -m rustfx.service worker ...`. It needs no training code: the
    dispatcher sends it the dataset graph (rustfx.offload's included)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    return main(["worker", *argv])


if __name__ == "__main__":
    sys.exit(main())
