"""`make` from the tests, one at a time across processes.

`make test` runs pytest in pytest-xdist's workers (the Makefile's PYTEST),
and two of them could otherwise run make at once: cargo locks its own
directory, but the venv's setup (`make predict` and `make serving-host`
run `make setup` when python/requirements.txt changed) and the serving
host that `make serving-host` links are not locked. With --dist loadfile a
module's fixtures run in one worker; with plain -n 2 (--dist load) both
workers may set up tests/python/test_serving_host.py's host."""

import fcntl
import os
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LOCK = os.path.join(ROOT, "target", ".make-lock")


def run_make(*targets, **kwargs):
    """`make -s TARGETS` in the checkout, holding an flock on target/.make-lock;
    the finished process (stdout and stderr as text)."""
    os.makedirs(os.path.dirname(LOCK), exist_ok=True)
    with open(LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return subprocess.run(["make", "-s", *targets], cwd=ROOT, capture_output=True,
                              text=True, **kwargs)
