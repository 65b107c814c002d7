// What every extractor op's kernel shares (extract_ops.cc has the ops):
// the base kernel holding the built Rust extractor, the document source
// and, for an op that reads files through a feature cache, its cache
// (kCacheAttrs; the process's cache of `cache_dir`, src/cache_ops.rs),
// whose chunks come from Rust whole, looked up or extracted, as parts; and
// the attrs every extractor op declares.
#ifndef RUSTFX_CPP_EXTRACTOR_KERNEL_H_
#define RUSTFX_CPP_EXTRACTOR_KERNEL_H_

#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "dtypes.h"
#include "tf_kernel.h"

namespace rustfx {

// The state every extractor kernel holds: the immutable Rust extractor and
// document source built from the attrs, so concurrent Compute calls are safe.
template <typename Op>
class ExtractorKernel {
 public:
  OpStatus Init(TF_OpKernelConstruction*, const Attrs& attrs) {
    std::string spec;
    RUSTFX_RETURN_IF_ERROR(attrs.String("spec", &spec));
    RUSTFX_RETURN_IF_ERROR(InvalidArgumentIfThrows([&] { extractor_.emplace(new_extractor(spec)); }));
    if (extractor().layout() != Op::kLayout) {
      return InvalidArgument(std::string(Op::kName) +
                             " cannot serve this spec's output layout; "
                             "use rustfx.extract(spec, ...), which picks the op: " +
                             spec);
    }
    RUSTFX_RETURN_IF_ERROR(GetDocumentSource(attrs, &source_));
    return InitCache(attrs, spec);
  }

 protected:
  const Extractor& extractor() const { return **extractor_; }
  const DocumentSource& source() const { return **source_; }
  // Whether the op's rows go through a feature cache it could open.
  bool cached() const { return cache_ && (**cache_).active(); }

  // The input's chunks (PlanChunks; through the cache, CachedChunks).
  DocumentChunks Chunks(const StringInput& input) const {
    if (cached()) return CachedChunks(input);
    return PlanChunks(OpThreads(), source(), input, extractor().cost_per_byte());
  }

  // Through the cache, the whole input in one chunk, one Rust call: Rust
  // shares its files between the op's threads one file at a time and
  // looks them up in groups (rustfx-cache's files.rs), since how much a
  // file costs (a hit: microseconds; a miss: an extraction) is only known
  // once it is looked up.
  DocumentChunks CachedChunks(const StringInput& input) const {
    DocumentChunks chunks;
    chunks.threads = OpThreads();
    if (input.size > 0) chunks.starts.push_back(input.size);
    return chunks;
  }

  // Checks that the op's output `attr` (its type attr, or `fixed` for an
  // op whose output type is in its signature) is the spec's dtype.
  OpStatus CheckDType(const Attrs& attrs, const char* attr, std::optional<TF_DataType> fixed) const {
    TF_DataType declared = fixed.value_or(TF_FLOAT);
    if (!fixed) RUSTFX_RETURN_IF_ERROR(attrs.Type(attr, &declared));
    const DTypeInfo& info = Info(extractor().dtype());
    if (declared != info.tf) {
      return InvalidArgument(std::string(Op::kName) + ": the output type is not the spec's dtype " +
                             info.attr_name);
    }
    return {};
  }

  // The ragged and sparse kernels' first half: each of `chunks` extracted
  // into a Part of its own (the core's batch of that chunk), checked. A
  // chunk of files comes one file at a time, each appended to its part.
  OpStatus ExtractParts(const StringInput& input, const DocumentChunks& chunks,
                        std::vector<std::optional<rust::Box<Part>>>* parts) const {
    if (cached()) return CachedParts(input, chunks, parts);
    parts->resize(chunks.count());
    const Extractor& e = extractor();
    RUSTFX_RETURN_IF_ERROR(ForEachChunk(
        Op::kName, source(), input, chunks,
        [&](int64_t c, int64_t, const DocumentChunk& chunk) {
          std::optional<rust::Box<Part>>& part = (*parts)[c];
          if (part) {
            e.append_part(chunk, **part);
          } else {
            part.emplace(e.extract_part(chunk));
          }
        }));
    for (int64_t c = 0; c < chunks.count(); ++c) {
      if (!(*parts)[c]) return Internal(std::string(Op::kName) + ": a chunk was not extracted");
      RUSTFX_RETURN_IF_ERROR(CheckPart(**(*parts)[c], chunks.end(c) - chunks.begin(c)));
    }
    return {};
  }

  // A part that does not match its `rows` documents is a bug in rustfx,
  // reported as Internal rather than copied out.
  static OpStatus CheckPart(const Part& part, int64_t rows) {
    const rust::Slice<const int64_t> ends = part.row_ends();
    const int64_t last_end = rows == 0 ? 0 : ends.data()[rows - 1];
    const int64_t count = static_cast<int64_t>(part.value_count());
    const rust::Slice<const int64_t> string_ends = part.string_ends();
    const bool strings_fit =
        string_ends.empty() || string_ends.data()[string_ends.size() - 1] ==
                                   static_cast<int64_t>(part.value_bytes().size());
    if (static_cast<int64_t>(ends.size()) != rows || last_end != count || !strings_fit) {
      return Internal(std::string(Op::kName) +
                      ": a chunk's rows do not match its documents (a bug in rustfx)");
    }
    return {};
  }

  // ExtractParts through the cache: each chunk's paths to Rust in one
  // call, which gives the chunk's rows, found or extracted. A file that
  // cannot be read fails the op as reading it does (with
  // read_on_error='raise'), the lowest such element's error.
  OpStatus CachedParts(const StringInput& input, const DocumentChunks& chunks,
                       std::vector<std::optional<rust::Box<Part>>>* parts) const {
    parts->resize(chunks.count());
    if (chunks.count() == 0) return {};
    FirstError error;
    auto run_chunk = [&](int64_t c) {
      const int64_t begin = chunks.begin(c), end = chunks.end(c);
      try {
        rust::Box<Part> part = (**cache_).extract_files(
            DocumentChunk(input.strings + begin, static_cast<size_t>(end - begin)));
        OpStatus failed = FromCore(part->error());
        if (!failed.ok()) error.Record(begin + static_cast<int64_t>(part->error_row()), failed);
        (*parts)[c].emplace(std::move(part));
      } catch (const std::exception& e) {
        error.Record(begin, Internal(e.what()));
      }
    };
    if (chunks.parallel && chunks.count() > 1) {
      RunChunks(chunks.count(), chunks.threads, run_chunk);
    } else {
      for (int64_t c = 0; c < chunks.count(); ++c) run_chunk(c);
    }
    RUSTFX_RETURN_IF_ERROR(error.status());
    for (int64_t c = 0; c < chunks.count(); ++c) {
      if (!(*parts)[c]) return Internal(std::string(Op::kName) + ": a chunk was not extracted");
      // Dense parts have no row ends: the dense kernel checks their size.
      if (Op::kLayout == Layout::Dense) continue;
      RUSTFX_RETURN_IF_ERROR(CheckPart(**(*parts)[c], chunks.end(c) - chunks.begin(c)));
    }
    return {};
  }

 private:
  // The cache of the `cache_*` attrs, when `cache_dir` is set (and the op
  // reads files): refused here for bad options, inactive (uncached) when
  // the directory is missing or does not open.
  OpStatus InitCache(const Attrs& attrs, const std::string& spec) {
    std::string dir, key;
    int64_t max_bytes = -1, read_max_bytes = 0;
    bool read_only = false;
    OnError on_error;
    RUSTFX_RETURN_IF_ERROR(attrs.String("cache_dir", &dir));
    if (dir.empty()) return {};
    if (!source().reads_files()) {
      return InvalidArgument(std::string(Op::kName) +
                             ": cache_dir is for an op that reads files (read_files=true)");
    }
    RUSTFX_RETURN_IF_ERROR(attrs.String("cache_key", &key));
    RUSTFX_RETURN_IF_ERROR(attrs.Int64("cache_max_bytes", &max_bytes));
    RUSTFX_RETURN_IF_ERROR(attrs.Bool("cache_read_only", &read_only));
    RUSTFX_RETURN_IF_ERROR(attrs.Int64("read_max_bytes", &read_max_bytes));
    RUSTFX_RETURN_IF_ERROR(attrs.Enum("read_on_error", parse_on_error, &on_error));
    return InvalidArgumentIfThrows([&] {
      cache_.emplace(new_op_cache(
          spec, rust::Slice<const uint8_t>(reinterpret_cast<const uint8_t*>(dir.data()), dir.size()),
          key, max_bytes, read_only, read_max_bytes, on_error));
    });
  }

  std::optional<rust::Box<Extractor>> extractor_;
  std::optional<rust::Box<DocumentSource>> source_;
  std::optional<rust::Box<OpCache>> cache_;
};

// An extractor op's feature cache (src/cache_ops.rs): the
// directory ('' for none), its key ("content" or "stat"), its cap (-1:
// the core's default), and whether it is only read (misses not stored).
inline constexpr const char* kCacheAttrs[] = {
    "cache_dir: string = ''",
    "cache_key: string = 'content'",
    "cache_max_bytes: int = -1",
    "cache_read_only: bool = false",
};

// The attrs of an extractor op: its spec, where its documents come from,
// and `extra`.
inline std::vector<const char*> ExtractorAttrs(std::initializer_list<const char*> extra = {}) {
  std::vector<const char*> attrs{"spec: string"};
  attrs.insert(attrs.end(), std::begin(kSourceAttrs), std::end(kSourceAttrs));
  attrs.insert(attrs.end(), std::begin(kCacheAttrs), std::end(kCacheAttrs));
  attrs.insert(attrs.end(), extra.begin(), extra.end());
  return attrs;
}

}  // namespace rustfx

#endif  // RUSTFX_CPP_EXTRACTOR_KERNEL_H_
