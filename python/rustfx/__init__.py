"""rustfx: fast, safe feature extraction from raw bytes, inside TensorFlow.

Every function here builds TensorFlow ops implemented in Rust, so it runs in
eager mode, inside `tf.function`, inside a `tf.data` map with any
`num_parallel_calls`, and in SavedModels (load rustfx before loading one).
`import rustfx` imports TensorFlow, loads the op library and checks it
was built for the running TensorFlow.

What needs no TensorFlow (specs, extraction into numpy, the worker side of
corpus extraction) is the package rustfx_core, which never imports it:
a process that must stay free of TensorFlow (a Ray corpus worker) imports
rustfx_core modules only, never rustfx.
"""

from rustfx_core import DEFAULT_MAX_BYTES  # noqa: F401
from rustfx_core.explain import explain  # numpy and pandas, no op (rustfx_core.explain)

# Each family module lists its public names in __all__: a new wrapper in a
# module is exported without an edit here. `rustfx.extract` is the function
# (rustfx.spec.extract); the module python/rustfx/extract.py exists only
# for `python -m rustfx.extract` (see there).
from rustfx import binary, io, spec, text
from rustfx.spec import *  # noqa: F401,F403
from rustfx.binary import *  # noqa: F401,F403
from rustfx.io import *  # noqa: F401,F403
from rustfx.text import *  # noqa: F401,F403
from rustfx import layers  # noqa: F401  (registers the Keras layer classes)
from rustfx import sensor  # noqa: F401  (rustfx.sensor.export, for rustfx-sensor)
from rustfx import pipeline  # noqa: F401  (rustfx.pipeline.profile: the trainer's stall)
from rustfx.offload import offload  # noqa: F401  (FX on tf.data service workers, by itself)
from rustfx import workers  # noqa: F401  (rustfx.workers.Local, .Ray: offload's own workers)
from rustfx.explain_model import explain_model  # noqa: F401  (rustfx_core.attribution, .report)

__all__ = [*spec.__all__, *text.__all__, *io.__all__, *binary.__all__]
