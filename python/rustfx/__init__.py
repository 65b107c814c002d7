"""rustfx: fast, safe feature extraction from raw bytes, inside TensorFlow.

Every function here builds TensorFlow ops implemented in Rust, so it runs in
eager mode, inside `tf.function`, inside a `tf.data` map with any
`num_parallel_calls`, and in SavedModels (load rustfx before loading one).
`import rustfx` loads the op library and checks it was built for the running
TensorFlow.
"""

from rustfx.binary import (BYTE_SEQUENCE_PRESETS, byte_entropy_histogram,
                           byte_histogram, byte_sequence, string_features)
from rustfx.io import DEFAULT_MAX_BYTES, ReadStatus, read_files
from rustfx.text import hashed_ngrams

__all__ = ["hashed_ngrams", "read_files", "ReadStatus", "DEFAULT_MAX_BYTES",
           "byte_histogram", "byte_entropy_histogram", "string_features",
           "byte_sequence", "BYTE_SEQUENCE_PRESETS"]
