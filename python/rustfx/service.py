"""Run a tf.data service worker that can execute rustfx ops.

When one machine cannot extract features fast enough, tf.data service
workers run the map stage elsewhere. A worker deserializes the dataset
graph, so it must have the rustfx ops registered *before* it starts; this
module does that (importing rustfx loads the op library).

    python -m rustfx.service --dispatcher HOST:PORT [--port N]
"""

import argparse

import tensorflow as tf

import rustfx  # noqa: F401  (registers the ops in this process)


def start_worker(dispatcher_address, port=0):
    """Starts an in-process tf.data service worker with rustfx loaded."""
    config = tf.data.experimental.service.WorkerConfig(
        dispatcher_address=dispatcher_address, port=port)
    return tf.data.experimental.service.WorkerServer(config)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dispatcher", required=True,
                        help="dispatcher address, HOST:PORT (no grpc://)")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    worker = start_worker(args.dispatcher, args.port)
    print(f"rustfx tf.data service worker started, dispatcher {args.dispatcher}",
          flush=True)
    worker.join()


if __name__ == "__main__":
    main()
