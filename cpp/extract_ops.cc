// The extractor ops: one op per output kind, serving every extractor of the
// core's registry. Each takes its documents (`input`, or the files it names:
// kSourceAttrs) and one `spec` attr, a FeatureSpec's JSON, which the core
// parses, checks (output version included) and builds when the kernel is
// constructed, before any output is computed. So a new extractor needs no
// C++: the registry entry in crates/rustfx/src/registry.rs is enough, and a SavedModel
// carries the spec of every extractor it uses.
//
// An op is a kernel class (kName, Init, Compute) and a definition; the
// kernel checks that the spec's output kind is the op's. Shapes: a C API
// shape function cannot read the spec, so outputs whose size the spec
// gives have an unknown last dimension here, and the Python wrappers set
// it (python/rustfx/spec.py).
#include <cstring>
#include <vector>

#include "tf_kernel.h"

namespace rustfx {
namespace {

// The state every extractor kernel holds: the immutable Rust extractor and
// document source built from the attrs, so concurrent Compute calls are safe.
template <typename Op>
class ExtractorKernel {
 public:
  OpStatus Init(TF_OpKernelConstruction*, const Attrs& attrs) {
    std::string spec;
    RUSTFX_RETURN_IF_ERROR(attrs.String("spec", &spec));
    RUSTFX_RETURN_IF_ERROR(InvalidArgumentIfThrows([&] { extractor_.emplace(new_extractor(spec)); }));
    if (!Op::Accepts(extractor().output_kind())) {
      return InvalidArgument(std::string(Op::kName) +
                             " cannot serve this spec's output kind; "
                             "use rustfx.extract(spec, ...), which picks the op: " +
                             spec);
    }
    return GetDocumentSource(attrs, &source_);
  }

 protected:
  const Extractor& extractor() const { return **extractor_; }
  const DocumentSource& source() const { return **source_; }

  // The input's chunks (PlanChunks).
  DocumentChunks Chunks(const StringInput& input) const {
    return PlanChunks(OpThreads(), source(), input, extractor().cost_per_byte());
  }

  // The ragged and sparse kernels' first half: each of `chunks` extracted
  // by `fill(chunk, part)` into a Part of its own. A Part has `row_ends`
  // (one per document, cumulative), `value_count()` and `Consistent()`
  // (see CheckPart).
  template <typename Part, typename Fill>
  OpStatus ExtractParts(const StringInput& input, const DocumentChunks& chunks,
                        std::vector<Part>* parts, Fill fill) const {
    parts->resize(chunks.count());
    RUSTFX_RETURN_IF_ERROR(ForEachChunk(
        Op::kName, source(), input, chunks,
        [&](int64_t c, int64_t, const DocumentChunk& chunk) { fill(chunk, (*parts)[c]); }));
    for (int64_t c = 0; c < chunks.count(); ++c) {
      RUSTFX_RETURN_IF_ERROR(CheckPart((*parts)[c], chunks.end(c) - chunks.begin(c)));
    }
    return {};
  }

  // A part that does not match its `rows` documents is a bug in rustfx,
  // reported as Internal rather than copied out.
  template <typename Part>
  static OpStatus CheckPart(const Part& part, int64_t rows) {
    const uint64_t last_end = rows == 0 ? 0 : part.row_ends.data()[rows - 1];
    if (static_cast<int64_t>(part.row_ends.size()) != rows || last_end != part.value_count() ||
        !part.Consistent()) {
      return Internal(std::string(Op::kName) +
                      ": a chunk's rows do not match its documents (a bug in rustfx)");
    }
    return {};
  }

 private:
  std::optional<rust::Box<Extractor>> extractor_;
  std::optional<rust::Box<DocumentSource>> source_;
};

// The attrs of an extractor op: its spec, where its documents come from,
// and `extra`.
std::vector<const char*> ExtractorAttrs(std::initializer_list<const char*> extra = {}) {
  std::vector<const char*> attrs{"spec: string"};
  attrs.insert(attrs.end(), std::begin(kSourceAttrs), std::end(kSourceAttrs));
  attrs.insert(attrs.end(), extra.begin(), extra.end());
  return attrs;
}

// ---- Dense rows: input.shape + [width] -------------------------------------

template <typename T>
struct DenseValue;
template <>
struct DenseValue<float> {
  static constexpr OutputKind kKind = OutputKind::Float32Rows;
  static constexpr TF_DataType kType = TF_FLOAT;
  static void Write(const Extractor& e, const DocumentChunk& docs, rust::Slice<float> rows) {
    e.write_f32_rows(docs, rows);
  }
};
template <>
struct DenseValue<int32_t> {
  static constexpr OutputKind kKind = OutputKind::Int32Rows;
  static constexpr TF_DataType kType = TF_INT32;
  static void Write(const Extractor& e, const DocumentChunk& docs, rust::Slice<int32_t> rows) {
    e.write_i32_rows(docs, rows);
  }
};
template <>
struct DenseValue<int64_t> {
  static constexpr OutputKind kKind = OutputKind::Int64Rows;
  static constexpr TF_DataType kType = TF_INT64;
  static void Write(const Extractor& e, const DocumentChunk& docs, rust::Slice<int64_t> rows) {
    e.write_i64_rows(docs, rows);
  }
};

// The fixed-width rows of a FeatureSpec's extractor (float32, int32 or
// int64, `Tout` must be the spec's dtype), of shape input.shape + [width].
struct DenseRowsOp {
  static constexpr char kName[] = "Rustfx>DenseRows";
  static bool Accepts(OutputKind kind) {
    return kind == OutputKind::Float32Rows || kind == OutputKind::Int32Rows ||
           kind == OutputKind::Int64Rows;
  }
  static void Shape(TF_ShapeInferenceContext* ctx, TF_Status* status) {
    InputShapePlusUnknown(ctx, 0, status);
  }

  template <typename T>
  class Kernel : public ExtractorKernel<DenseRowsOp> {
   public:
    static constexpr const char* kName = DenseRowsOp::kName;
    OpStatus Init(TF_OpKernelConstruction* ctx, const Attrs& attrs) {
      RUSTFX_RETURN_IF_ERROR(ExtractorKernel::Init(ctx, attrs));
      if (extractor().output_kind() != DenseValue<T>::kKind) {
        return InvalidArgument("Tout is not the spec's output dtype");
      }
      return {};
    }
    OpStatus Compute(TF_OpKernelContext* ctx) const {
      const Extractor& e = extractor();
      StringInput input;
      RUSTFX_RETURN_IF_ERROR(GetStringInput(ctx, 0, &input));
      const int64_t width = static_cast<int64_t>(e.width());
      std::vector<int64_t> dims = input.dims;
      dims.push_back(width);
      TensorPtr output;
      RUSTFX_RETURN_IF_ERROR(AllocateOutput(ctx, 0, DenseValue<T>::kType, dims, &output));
      T* rows = Data<T>(output);
      const DocumentChunks chunks = PlanChunks(OpThreads(), source(), input,
                                               e.cost_per_byte(), e.work_bytes_hint());
      return ForEachChunk(kName, source(), input, chunks,
                          [&](int64_t, int64_t first, const DocumentChunk& chunk) {
                            DenseValue<T>::Write(
                                e, chunk, rust::Slice<T>(rows + first * width, chunk.len() * width));
                          });
    }
  };
};

// ---- Ragged rows: values + row_splits over the flattened input -------------

// The parts of a ragged output (checked by ExtractParts): chunk c's
// `row_ends` and its `value_count()` values, copied by `copy(part, out)`
// into output `values_index` (of `dtype`, element type T) as one flat
// tensor, with row_splits at `values_index + 1`.
template <typename T, typename Part, typename Copy>
OpStatus EmitRagged(TF_OpKernelContext* ctx, const DocumentChunks& chunks,
                    const std::vector<Part>& parts, int values_index, TF_DataType dtype,
                    Copy copy) {
  const int64_t n = chunks.count() > 0 ? chunks.end(chunks.count() - 1) : 0;
  TensorPtr splits;
  RUSTFX_RETURN_IF_ERROR(AllocateOutput(ctx, values_index + 1, TF_INT64, {n + 1}, &splits));
  int64_t* splits_flat = Data<int64_t>(splits);
  splits_flat[0] = 0;
  std::vector<int64_t> part_starts(parts.size() + 1, 0);
  for (int64_t c = 0; c < chunks.count(); ++c) {
    const Part& part = parts[c];
    const int64_t rows = chunks.end(c) - chunks.begin(c);
    const uint64_t* ends = part.row_ends.data();
    const int64_t base = part_starts[c];
    for (int64_t j = 0; j < rows; ++j) {
      splits_flat[chunks.begin(c) + j + 1] = base + static_cast<int64_t>(ends[j]);
    }
    part_starts[c + 1] = base + static_cast<int64_t>(part.value_count());
  }
  TensorPtr values;
  RUSTFX_RETURN_IF_ERROR(AllocateOutput(ctx, values_index, dtype, {part_starts.back()}, &values));
  T* out = Data<T>(values);
  // Chunks are copied in parallel: they can be larger than the input.
  ForEachRange(chunks.count(), chunks.threads, [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) copy(parts[c], out + part_starts[c]);
  });
  return {};
}

// values: [unknown]; row_splits: [input elements + 1].
void RaggedShape(TF_ShapeInferenceContext* ctx, TF_Status* status) {
  const int64_t n = InputElements(ctx, status);
  if (TF_GetCode(status) != TF_OK) return;
  ShapeHandle values(Vector(ctx, -1)), splits(Vector(ctx, n < 0 ? -1 : n + 1));
  TF_ShapeInferenceContextSetOutput(ctx, 0, values.get(), status);
  if (TF_GetCode(status) != TF_OK) return;
  TF_ShapeInferenceContextSetOutput(ctx, 1, splits.get(), status);
}

// The int64 ids of a FeatureSpec's extractor with a ragged output (hashed
// n-grams), for every element of `input` (read flattened): element i owns
// values[row_splits[i]:row_splits[i+1]].
struct RaggedIdsOp {
  static constexpr char kName[] = "Rustfx>RaggedIds";
  static bool Accepts(OutputKind kind) { return kind == OutputKind::RaggedIds; }

  // A chunk's ids, end to end, and where each document's end.
  struct IdRows {
    rust::Vec<int64_t> ids;
    rust::Vec<uint64_t> row_ends;
    size_t value_count() const { return ids.size(); }
    bool Consistent() const { return true; }
  };

  class Kernel : public ExtractorKernel<RaggedIdsOp> {
   public:
    static constexpr const char* kName = RaggedIdsOp::kName;
    OpStatus Compute(TF_OpKernelContext* ctx) const {
      const Extractor& e = extractor();
      StringInput input;
      RUSTFX_RETURN_IF_ERROR(GetStringInput(ctx, 0, &input));
      const bool countable = !source().reads_files() && e.counts_ids_up_front();
      if (countable) {
        bool done = false;
        RUSTFX_RETURN_IF_ERROR(ComputeInPlace(ctx, e, input, &done));
        if (done) return {};
      }
      const DocumentChunks chunks = Chunks(input);
      if (!chunks.parallel) {
        // Ids the output starts with room for.
        int64_t room = 0;
        if (countable) RUSTFX_RETURN_IF_ERROR(MaxIds(e, input, &room));
        return ComputeInOrder(ctx, e, input, chunks, room);
      }
      std::vector<IdRows> parts;
      RUSTFX_RETURN_IF_ERROR(ExtractParts(input, chunks, &parts,
                                          [&e](const DocumentChunk& chunk, IdRows& part) {
                                            e.append_id_rows(chunk, part.ids, part.row_ends);
                                          }));
      return EmitRagged<int64_t>(ctx, chunks, parts, 0, TF_INT64,
                                 [](const IdRows& part, int64_t* out) {
                                   if (!part.ids.empty()) {
                                     std::memcpy(out, part.ids.data(),
                                                 part.ids.size() * sizeof(int64_t));
                                   }
                                 });
    }

   private:
    // Chunks run in order on this thread: each chunk's ids are copied into
    // `values` as soon as they are made, while in cache, instead of all
    // chunks being kept and copied at the end (10% of whitespace ids of
    // log lines: 21 MB gathered, then read back from memory). `values`
    // grows as needed, sized at each growth for the documents left at the
    // rate so far and an eighth more, from `room` ids; the output is its
    // first ids (the rest unused, or copied to size when more than half
    // would be).
    OpStatus ComputeInOrder(TF_OpKernelContext* ctx, const Extractor& e,
                            const StringInput& input, const DocumentChunks& chunks,
                            int64_t room) const {
      const int64_t n = input.size;
      TensorPtr splits;
      RUSTFX_RETURN_IF_ERROR(AllocateOutput(ctx, 1, TF_INT64, {n + 1}, &splits));
      int64_t* row_splits = Data<int64_t>(splits);
      row_splits[0] = 0;
      IdBuffer values(ctx);
      RUSTFX_RETURN_IF_ERROR(values.Reserve(room, 0));
      int64_t used = 0;
      IdRows part;
      OpStatus status;
      RUSTFX_RETURN_IF_ERROR(ForEachChunk(
          kName, source(), input, chunks, [&](int64_t, int64_t first, const DocumentChunk& chunk) {
            if (!status.ok()) return;
            part.ids.clear();
            part.row_ends.clear();
            e.append_id_rows(chunk, part.ids, part.row_ends);
            const int64_t rows = static_cast<int64_t>(chunk.len());
            status = CheckPart(part, rows);
            if (!status.ok()) return;
            const uint64_t* ends = part.row_ends.data();
            for (int64_t j = 0; j < rows; ++j) {
              row_splits[first + j + 1] = used + static_cast<int64_t>(ends[j]);
            }
            const int64_t count = static_cast<int64_t>(part.ids.size());
            if (used + count > values.capacity()) {
              const int64_t done = first + rows;
              const int64_t expected = used + count + (used + count) / done * (n - done);
              status = values.Reserve(expected + expected / 8, used);
              if (!status.ok()) return;
            }
            if (count > 0) {
              std::memcpy(values.data() + used, part.ids.data(), count * sizeof(int64_t));
            }
            used += count;
          }));
      RUSTFX_RETURN_IF_ERROR(status);
      if (used < values.capacity() / 2) RUSTFX_RETURN_IF_ERROR(values.Reserve(used, used));
      return values.SetOutput(0, used);
    }

    // The room ComputeInOrder starts with when `write_row_splits` could
    // not count (a binary's characters): at most as many ids as the
    // documents have windows, so `values` never grows (a binary has a
    // character for almost every byte; on compressed files, growing from
    // the first chunks' rate cost 6%). Capped: a larger batch grows.
    static OpStatus MaxIds(const Extractor& e, const StringInput& input, int64_t* room) {
      constexpr uint64_t kMaxPresizedIds = uint64_t{1} << 26;  // 512 MiB
      try {
        const uint64_t bound =
            e.max_ids(DocumentChunk(input.strings, static_cast<size_t>(input.size)));
        *room = static_cast<int64_t>(std::min(bound, kMaxPresizedIds));
      } catch (const std::exception& err) {
        return Internal(std::string(kName) + ": " + err.what());
      }
      return {};
    }

    // Byte and character n-grams: each document's id count (its windows)
    // is known up front, so the outputs are sized first and each
    // chunk's ids are written straight into `values`, not gathered and
    // copied (8 bytes per n-gram). `*done` stays false, with no output
    // set, when a document's ids cannot be counted (the caller gathers).
    OpStatus ComputeInPlace(TF_OpKernelContext* ctx, const Extractor& e, const StringInput& input,
                            bool* done) const {
      const int64_t n = input.size;
      IdBuffer splits(ctx);
      RUSTFX_RETURN_IF_ERROR(splits.Reserve(n + 1, 0));
      int64_t* row_splits = splits.data();
      try {
        if (!e.write_row_splits(
                DocumentChunk(input.strings, static_cast<size_t>(n)),
                rust::Slice<int64_t>(row_splits, static_cast<size_t>(n + 1)))) {
          return {};
        }
      } catch (const std::exception& err) {
        return InvalidArgument(std::string(kName) + ": " + err.what());
      }
      *done = true;
      const int64_t total = row_splits[n];
      TensorPtr values;
      RUSTFX_RETURN_IF_ERROR(AllocateOutput(ctx, 0, TF_INT64, {total}, &values));
      int64_t* out = Data<int64_t>(values);
      const DocumentChunks chunks = Chunks(input);
      RUSTFX_RETURN_IF_ERROR(ForEachChunk(
          kName, source(), input, chunks, [&](int64_t, int64_t first, const DocumentChunk& chunk) {
            const int64_t begin = row_splits[first];
            const int64_t end = row_splits[first + chunk.len()];
            if (end == begin) return;
            e.write_id_rows(chunk, rust::Slice<int64_t>(out + begin, end - begin));
          }));
      return splits.SetOutput(1, n + 1);
    }
  };
};

// The strings of a FeatureSpec's extractor with a ragged string output
// (printable strings), for every element of `input` (read flattened):
// element i owns values[row_splits[i]:row_splits[i+1]].
struct RaggedStringsOp {
  static constexpr char kName[] = "Rustfx>RaggedStrings";
  static bool Accepts(OutputKind kind) { return kind == OutputKind::RaggedStrings; }

  // A chunk's strings: their bytes end to end, where each string ends, and
  // where each document's strings end (a count of strings).
  struct StringRows {
    rust::Vec<uint8_t> bytes;
    rust::Vec<uint64_t> ends;
    rust::Vec<uint64_t> row_ends;
    size_t value_count() const { return ends.size(); }
    bool Consistent() const {
      return (ends.empty() ? 0 : ends.data()[ends.size() - 1]) == bytes.size();
    }
  };

  class Kernel : public ExtractorKernel<RaggedStringsOp> {
   public:
    static constexpr const char* kName = RaggedStringsOp::kName;
    OpStatus Compute(TF_OpKernelContext* ctx) const {
      const Extractor& e = extractor();
      StringInput input;
      RUSTFX_RETURN_IF_ERROR(GetStringInput(ctx, 0, &input));
      const DocumentChunks chunks = Chunks(input);
      std::vector<StringRows> parts;
      RUSTFX_RETURN_IF_ERROR(ExtractParts(input, chunks, &parts,
                                          [&e](const DocumentChunk& chunk, StringRows& part) {
                                            e.append_string_rows(chunk, part.bytes, part.ends,
                                                                 part.row_ends);
                                          }));
      return EmitRagged<TF_TString>(
          ctx, chunks, parts, 0, TF_STRING, [](const StringRows& part, TF_TString* out) {
            const char* bytes = reinterpret_cast<const char*>(part.bytes.data());
            const uint64_t* ends = part.ends.data();
            uint64_t start = 0;
            for (size_t j = 0; j < part.ends.size(); ++j) {
              TF_TString_Copy(&out[j], bytes + start, ends[j] - start);
              start = ends[j];
            }
          });
    }
  };
};

// ---- Sparse rows: the parts of a tf.SparseTensor ----------------------------

// The sparse rows of a FeatureSpec's extractor (bags of hashed n-grams), as
// the parts of a tf.SparseTensor of dense shape [num_elements, width]
// (input read flattened), indices sorted row-major.
struct SparseRowsOp {
  static constexpr char kName[] = "Rustfx>SparseRows";
  static bool Accepts(OutputKind kind) { return kind == OutputKind::SparseRows; }
  static void Shape(TF_ShapeInferenceContext* ctx, TF_Status* status) {
    ShapeHandle unknown(Vector(ctx, -1)), two(Vector(ctx, 2)), indices;
    TF_ShapeInferenceContextConcatenateShapes(ctx, unknown.get(), two.get(), indices.get(), status);
    if (TF_GetCode(status) == TF_OK) TF_ShapeInferenceContextSetOutput(ctx, 0, indices.get(), status);
    if (TF_GetCode(status) == TF_OK) TF_ShapeInferenceContextSetOutput(ctx, 1, unknown.get(), status);
    if (TF_GetCode(status) == TF_OK) TF_ShapeInferenceContextSetOutput(ctx, 2, two.get(), status);
  }

  // A chunk's sparse rows: indices and values end to end, and where each
  // document's end.
  struct SparseParts {
    rust::Vec<uint64_t> indices;
    rust::Vec<float> values;
    rust::Vec<uint64_t> row_ends;
    size_t value_count() const { return indices.size(); }
    bool Consistent() const { return values.size() == indices.size(); }
  };

  class Kernel : public ExtractorKernel<SparseRowsOp> {
   public:
    static constexpr const char* kName = SparseRowsOp::kName;
    OpStatus Compute(TF_OpKernelContext* ctx) const {
      const Extractor& e = extractor();
      StringInput input;
      RUSTFX_RETURN_IF_ERROR(GetStringInput(ctx, 0, &input));
      const DocumentChunks chunks = Chunks(input);
      std::vector<SparseParts> parts;
      RUSTFX_RETURN_IF_ERROR(ExtractParts(input, chunks, &parts,
                                          [&e](const DocumentChunk& chunk, SparseParts& part) {
                                            e.append_sparse_rows(chunk, part.indices, part.values,
                                                                 part.row_ends);
                                          }));
      std::vector<int64_t> starts(chunks.count() + 1, 0);
      for (int64_t c = 0; c < chunks.count(); ++c) {
        starts[c + 1] = starts[c] + static_cast<int64_t>(parts[c].value_count());
      }
      const int64_t nnz = starts.back();
      TensorPtr indices, values, dense_shape;
      RUSTFX_RETURN_IF_ERROR(AllocateOutput(ctx, 0, TF_INT64, {nnz, 2}, &indices));
      RUSTFX_RETURN_IF_ERROR(AllocateOutput(ctx, 1, TF_FLOAT, {nnz}, &values));
      RUSTFX_RETURN_IF_ERROR(AllocateOutput(ctx, 2, TF_INT64, {2}, &dense_shape));
      // Chunks are copied in parallel: they can be larger than the input.
      // Through plain pointers: each rust::Vec access is a call into Rust.
      int64_t* idx = Data<int64_t>(indices);
      float* val = Data<float>(values);
      ForEachRange(chunks.count(), chunks.threads, [&](int64_t begin, int64_t end) {
        for (int64_t c = begin; c < end; ++c) {
          const SparseParts& part = parts[c];
          const uint64_t* cols = part.indices.data();
          const uint64_t* ends = part.row_ends.data();
          int64_t* out = idx + 2 * starts[c];
          uint64_t j = 0;
          for (int64_t r = 0; r < chunks.end(c) - chunks.begin(c); ++r) {
            const int64_t row = chunks.begin(c) + r;
            for (; j < ends[r]; ++j) {
              out[2 * j] = row;
              // Below the width <= int64 max (NgramHasher::new).
              out[2 * j + 1] = static_cast<int64_t>(cols[j]);
            }
          }
          if (!part.values.empty()) {
            std::memcpy(val + starts[c], part.values.data(), part.values.size() * sizeof(float));
          }
        }
      });
      Data<int64_t>(dense_shape)[0] = input.size;
      Data<int64_t>(dense_shape)[1] = static_cast<int64_t>(e.width());
      return {};
    }
  };
};

// ---- Registration ------------------------------------------------------------

void RegisterExtractorOps() {
  RegisterOp({DenseRowsOp::kName,
              {"input: string"},
              {"features: Tout"},
              ExtractorAttrs({"Tout: {float, int32, int64}"}),
              DenseRowsOp::Shape});
  RegisterKernel<DenseRowsOp::Kernel<float>>(DenseRowsOp::kName, "RustfxDenseRowsFloat",
                                             std::make_pair("Tout", TF_FLOAT));
  RegisterKernel<DenseRowsOp::Kernel<int32_t>>(DenseRowsOp::kName, "RustfxDenseRowsInt32",
                                               std::make_pair("Tout", TF_INT32));
  RegisterKernel<DenseRowsOp::Kernel<int64_t>>(DenseRowsOp::kName, "RustfxDenseRowsInt64",
                                               std::make_pair("Tout", TF_INT64));

  RegisterOp({RaggedIdsOp::kName,
              {"input: string"},
              {"values: int64", "row_splits: int64"},
              ExtractorAttrs(),
              RaggedShape});
  RegisterKernel<RaggedIdsOp::Kernel>(RaggedIdsOp::kName, "RustfxRaggedIds");

  RegisterOp({RaggedStringsOp::kName,
              {"input: string"},
              {"values: string", "row_splits: int64"},
              ExtractorAttrs(),
              RaggedShape});
  RegisterKernel<RaggedStringsOp::Kernel>(RaggedStringsOp::kName, "RustfxRaggedStrings");

  RegisterOp({SparseRowsOp::kName,
              {"input: string"},
              {"indices: int64", "values: float", "dense_shape: int64"},
              ExtractorAttrs(),
              SparseRowsOp::Shape});
  RegisterKernel<SparseRowsOp::Kernel>(SparseRowsOp::kName, "RustfxSparseRows");
}

// tf.load_op_library runs the library's static initializers, not
// TF_InitKernel.
const bool registered = (RegisterExtractorOps(), true);

}  // namespace
}  // namespace rustfx
