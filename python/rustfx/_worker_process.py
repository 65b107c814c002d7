"""One local worker of rustfx.workers.Local: `python -m rustfx._worker_process
DISPATCHER PARENT_PID`, started by the launcher, never by hand (by hand:
`rustfx-worker`, rustfx.service).

The parent writes the pickled `setup` (8-byte little-endian length, then the
bytes) on stdin; this process runs it, imports rustfx (TensorFlow and the
ops) and says `warm` on stdout; then a line `serve` on stdin starts its
tf.data service worker, and it says `serving PORT`. It exits (os._exit,
the worker holds nothing) when its stdin closes or its parent is gone
(`os.getppid()` changed, polled by a watchdog thread): so a trainer killed
with -9 leaves no worker behind. PR_SET_PDEATHSIG alone would not do: it
fires when the spawning *thread* exits, and the launcher's thread is not
the trainer's lifetime."""

import os
import pickle
import sys
import threading
import time

PARENT_POLL_SECONDS = 0.25
HEARTBEAT_MS = 500


def _watch_parent(parent):
    while os.getppid() == parent:
        time.sleep(PARENT_POLL_SECONDS)
    os._exit(0)


def main(argv):
    dispatcher, parent = argv[0], int(argv[1])
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True,
                     name="rustfx-worker-watchdog").start()
    # stdout is the launcher's channel; what the worker prints goes to the log.
    channel = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    stdin = sys.stdin.buffer
    size = int.from_bytes(stdin.read(8) or b"\0" * 8, "little")
    setup = pickle.loads(stdin.read(size)) if size else None
    if setup is not None:
        setup()
    from rustfx import service
    from rustfx._tf_internals import bound_port

    channel.write("warm\n")
    if stdin.readline().strip() != b"serve":
        os._exit(0)  # closed before serving: the launcher stopped it
    server = service.start_worker(dispatcher, worker_address="localhost:%port%",
                                  heartbeat_interval_ms=HEARTBEAT_MS)
    channel.write(f"serving {bound_port(server)}\n")
    stdin.read()  # till the launcher closes it (or is gone)
    os._exit(0)


if __name__ == "__main__":
    main(sys.argv[1:])
