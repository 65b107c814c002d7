// A run of documents handed to Rust in one call (src/bridge.rs): on short
// records (a URL, a command line) a call per document costs as much as the
// work. Consecutive elements of a string tensor, or one buffer (a file just
// read). Rust takes them all at once (`fill`).
#ifndef RUSTFX_CPP_DOCUMENT_CHUNK_H_
#define RUSTFX_CPP_DOCUMENT_CHUNK_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "rust/cxx.h"
#include "tensorflow/core/platform/tstring.h"

namespace rustfx {

class DocumentChunk {
 public:
  DocumentChunk(const tensorflow::tstring* strings, size_t n) : strings_(strings), n_(n) {}
  explicit DocumentChunk(rust::Slice<const uint8_t> one) : one_(one), n_(1) {}

  size_t len() const { return n_; }
  void fill(rust::Slice<rust::Slice<const uint8_t>> docs) const {
    const size_t n = std::min(n_, docs.size());
    if (strings_ == nullptr) {
      if (n > 0) docs[0] = one_;
      return;
    }
    for (size_t i = 0; i < n; ++i) {
      const tensorflow::tstring& s = strings_[i];
      docs[i] = rust::Slice<const uint8_t>(reinterpret_cast<const uint8_t*>(s.data()), s.size());
    }
  }

 private:
  const tensorflow::tstring* strings_ = nullptr;
  rust::Slice<const uint8_t> one_;
  size_t n_;
};

}  // namespace rustfx

#endif  // RUSTFX_CPP_DOCUMENT_CHUNK_H_
