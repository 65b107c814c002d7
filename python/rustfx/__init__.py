"""rustfx: fast, safe feature extraction from raw bytes, inside TensorFlow.

Every function here builds TensorFlow ops implemented in Rust, so it runs in
eager mode, inside `tf.function`, inside a `tf.data` map with any
`num_parallel_calls`, and in SavedModels (load rustfx before loading one).
`import rustfx` loads the op library and checks it was built for the running
TensorFlow.
"""

import os as _os

from rustfx._core import DEFAULT_MAX_BYTES  # noqa: F401

if _os.environ.get("RUSTFX_CORE_ONLY") == "1":
    # A Ray corpus worker (rustfx.corpus sets this for its actors): it uses
    # only the core's C ABI (rustfx._core), so TensorFlow, the op library
    # and Keras are not loaded (about 5 s and hundreds of MB per worker).
    __all__ = []
else:
    # Each family module lists its public names in __all__: a new wrapper
    # in a module is exported without an edit here.
    from rustfx import binary, io, spec, text
    from rustfx.spec import *  # noqa: F401,F403
    from rustfx.binary import *  # noqa: F401,F403
    from rustfx.io import *  # noqa: F401,F403
    from rustfx.text import *  # noqa: F401,F403
    from rustfx import layers  # noqa: F401  (registers the Keras layer classes)
    from rustfx import sensor  # noqa: F401  (rustfx.sensor.export, for rustfx-sensor)

    __all__ = [*spec.__all__, *text.__all__, *io.__all__, *binary.__all__]
