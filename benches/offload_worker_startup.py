"""How fast rustfx.workers' workers serve (docs/scale.md, "Launchers"):
cold (a new Ray actor or Local process: TensorFlow imported first) and
from the warm spare the launcher keeps. Runs a one-node
ray.cluster_utils.Cluster on this machine.

    PYTHONPATH=python .venv/bin/python benches/offload_worker_startup.py
"""

import os
import time

import ray
from ray.cluster_utils import Cluster

import rustfx
from rustfx import pipeline


def until(condition):
    while not condition():
        time.sleep(0.01)


def main():
    cluster = Cluster(initialize_head=True,
                      head_node_args={"num_cpus": 2, "include_dashboard": False})
    ray.init(address=cluster.address, log_to_driver=False)
    pipe = pipeline.from_files([os.path.abspath(__file__)] * 4, rustfx.byte_histogram,
                               batch_size=2)
    for kind, runs in (("Ray", 3), ("Local", 2)):
        for i in range(runs):
            start = time.perf_counter()
            off = rustfx.offload(pipe, workers=getattr(rustfx.workers, kind)(1, min_workers=1))
            until(lambda: off._pool.ready >= 1)
            print(f"{kind} cold {i}: serving {time.perf_counter() - start:.2f} s after the "
                  f"Offload was made", flush=True)
            off.close()
    for kind in ("Ray", "Local"):
        off = rustfx.offload(pipe, workers=getattr(rustfx.workers, kind)(2))
        pool = off._pool  # min_workers 0: one warm spare, none serving
        until(lambda: all(h.placed() and getattr(h, "state", "warm") == "warm"
                          for h in pool.handles))
        time.sleep(1)
        start = time.perf_counter()
        pool.set_target(1)
        until(lambda: pool.ready >= 1)
        print(f"{kind} warm spare: serving {time.perf_counter() - start:.2f} s after asked",
              flush=True)
        off.close()
    ray.shutdown()
    cluster.shutdown()


if __name__ == "__main__":
    main()
