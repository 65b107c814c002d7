// The TF version these kernels were compiled against (build.rs defines
// RUSTFX_TF_VERSION from the TensorFlow that gave the flags). rustfx reads it
// from the .so file before loading it, so a mismatch is reported clearly
// instead of as an undefined symbol or a crash.
extern "C" __attribute__((used, retain)) const char rustfx_built_against[] =
    "rustfx-built-against-tensorflow=" RUSTFX_TF_VERSION;
