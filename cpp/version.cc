// The TF whose C API headers these kernels were compiled against (build.rs
// defines RUSTFX_TF_VERSION). The library loads into any TF with that C
// API (BUILD_NOTES.md); rustfx's loader reads this from the file for its
// messages, without loading it.
extern "C" __attribute__((used, retain)) const char rustfx_built_against[] =
    "rustfx-built-against-tensorflow=" RUSTFX_TF_VERSION;
