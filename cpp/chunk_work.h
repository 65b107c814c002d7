// An op call's work on the chunks of its batch, run by Rust's run_chunks
// (src/op_threads.rs) on a rayon pool: TF's C kernel API has no thread
// pool. Rust shares one ChunkWork between threads (bridge.rs declares it
// Sync), so `run` only reads the captured state and writes the chunk's own
// part of the outputs, and it never throws: a kernel's work records its
// errors itself (FirstError in tf_kernel.h).
#ifndef RUSTFX_CPP_CHUNK_WORK_H_
#define RUSTFX_CPP_CHUNK_WORK_H_

#include <cstddef>
#include <cstdint>
#include <functional>

namespace rustfx {

class ChunkWork {
 public:
  explicit ChunkWork(const std::function<void(int64_t)>& work) : work_(work) {}
  void run(size_t chunk) const noexcept {
    try {
      work_(static_cast<int64_t>(chunk));
    } catch (...) {
      // The kernels' work catches its own errors; nothing may unwind into
      // Rust.
    }
  }

 private:
  const std::function<void(int64_t)>& work_;
};

}  // namespace rustfx

#endif  // RUSTFX_CPP_CHUNK_WORK_H_
