"""TensorFlow's internals that rustfx uses, all here, each with why.

rustfx.offload needs them for one thing: reading a tf.data service job
from a thread that the epoch's end can stop (`CancellableIterator`'s doc
says why no public API does); rustfx.service for another: the port a
tf.data service worker bound (`bound_port`). Each is internal to TF's
Python package, with no compatibility promise: a TF release that moves
one breaks this module only, and tests/python/test_offload_faults.py
(a worker killed mid-epoch, the dispatcher down) and the matrix's offload
epoch on each TF (tests/matrix/test_matrix_suite.py) are what find it.

  - tensorflow.python.eager.cancellation: CancellationManager, the token
    that cancels a running op from another thread (tf.function's
    cancellable calls take one; no public API makes or takes one);
  - tensorflow.python.eager.execute: execute_with_cancellation, to run
    IteratorGetNext under that token, and make_type / make_shape, to pass
    the op its output types and shapes as attrs;
  - tensorflow.python.eager.context: context(), the eager context the op
    runs in;
  - tensorflow.python.ops.gen_dataset_ops: anonymous_iterator_v3 and
    make_iterator, to make the iterator resource that op reads (iter() of
    a dataset makes one too, but reads it only by uncancellable calls);
  - tensorflow.python.data.util.structure: a dataset's element_spec as the
    flat lists of types and shapes those ops take, and their flat outputs
    back as the element; and Dataset._variant_tensor, the dataset that
    make_iterator takes;
  - WorkerServer._address: "localhost:PORT", the port a worker started
    with port=0 bound (DispatchServer has `target`; WorkerServer has no
    public accessor).
"""

import tensorflow as tf
from tensorflow.python.data.util import structure
from tensorflow.python.eager import context, execute
from tensorflow.python.eager.cancellation import CancellationManager
from tensorflow.python.ops import gen_dataset_ops

__all__ = ["CancellationManager", "CancellableIterator", "bound_port"]


class CancellableIterator:
    """The batches of one iteration of a tf.data service dataset (a new
    job), read by ops that `cancel` (a CancellationManager) ends from
    another thread.

    Why: with a worker dead mid-epoch, TF's client (2.16-2.21,
    "distributed_epoch") waits inside IteratorGetNext for it to come back,
    forever. A thread blocked there never ends, deleting the iterator
    does not end it (the running op holds the iterator resource), and
    distribute() has no timeout. So next() runs IteratorGetNext itself
    under `cancel`, as tf.function's cancellable calls do: cancelling it
    cancels the iterator (its job's client stops its RPCs and threads) and
    the op raises CancelledError; the thread then ends, and its iterator
    is freed. (Measured with a worker killed mid-epoch: before, each
    epoch left a thread and 9 of TF's; after, none.) With the dispatcher
    down, the client waits inside MakeIterator (the job's creation)
    instead, and cancelling that blocks (rustfx.offload's _EpochState.finish
    cancels only once the job is made). Not
    CancellationManager.get_cancelable_function: it sets one context for
    every thread of the process while the call blocks, so the trainer's
    own functions would be cancelled with it."""

    def __init__(self, dataset, cancel):
        self._dataset, self._cancel = dataset, cancel  # the dataset outlives its iterator
        self._spec = dataset.element_spec
        types = structure.get_flat_tensor_types(self._spec)
        shapes = structure.get_flat_tensor_shapes(self._spec)
        self._resource = gen_dataset_ops.anonymous_iterator_v3(
            output_types=types, output_shapes=shapes)
        self._attrs = ("output_types", [execute.make_type(t, "output_types") for t in types],
                       "output_shapes", [execute.make_shape(s, "output_shapes") for s in shapes])
        gen_dataset_ops.make_iterator(dataset._variant_tensor, self._resource)

    def next(self):
        """The next element, None at the end."""
        try:
            flat = execute.execute_with_cancellation(
                b"IteratorGetNext", len(self._attrs[1]), [self._resource], self._attrs,
                context.context(), self._cancel)
        except tf.errors.OutOfRangeError:
            return None
        return structure.from_compatible_tensor_list(self._spec, flat)


def bound_port(server):
    """The port a tf.data service DispatchServer or WorkerServer bound."""
    address = server.target if hasattr(server, "target") else server._address
    return int(address.rsplit(":", 1)[1])
