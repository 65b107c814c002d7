// A run of documents handed to Rust in one call (src/bridge.rs): on short
// records (a URL, a command line) a call per document costs as much as the
// work. Consecutive elements of a string tensor (TF_TString, the C API's
// string, read with its header-only accessors), or one buffer (a file just
// read). Rust takes them all at once (`fill`).
#ifndef RUSTFX_CPP_DOCUMENT_CHUNK_H_
#define RUSTFX_CPP_DOCUMENT_CHUNK_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "rust/cxx.h"
#include "tensorflow/c/tf_tstring.h"

namespace rustfx {

inline rust::Slice<const uint8_t> AsBytes(const TF_TString& s) {
  return rust::Slice<const uint8_t>(reinterpret_cast<const uint8_t*>(TF_TString_GetDataPointer(&s)),
                                    TF_TString_GetSize(&s));
}

class DocumentChunk {
 public:
  DocumentChunk(const TF_TString* strings, size_t n) : strings_(strings), n_(n) {}
  explicit DocumentChunk(rust::Slice<const uint8_t> one) : one_(one), n_(1) {}

  size_t len() const { return n_; }
  void fill(rust::Slice<rust::Slice<const uint8_t>> docs) const {
    const size_t n = std::min(n_, docs.size());
    if (strings_ == nullptr) {
      if (n > 0) docs[0] = one_;
      return;
    }
    for (size_t i = 0; i < n; ++i) docs[i] = AsBytes(strings_[i]);
  }

 private:
  const TF_TString* strings_ = nullptr;
  rust::Slice<const uint8_t> one_;
  size_t n_;
};

}  // namespace rustfx

#endif  // RUSTFX_CPP_DOCUMENT_CHUNK_H_
