// The extractor ops: one kernel per output layout (dense, ragged, sparse),
// serving every extractor of the core's registry and every dtype through
// the dtype table (dtypes.h). Each takes its documents (`input`, or the files it names:
// kSourceAttrs) and one `spec` attr, a FeatureSpec's JSON, which the core
// parses, checks (output version included) and builds when the kernel is
// constructed, before any output is computed. So a new extractor needs no
// C++: the registry entry in crates/rustfx/src/registry.rs is enough, and a SavedModel
// carries the spec of every extractor it uses.
//
// An op is a kernel class (kName, Init, Compute) and a definition; the
// kernel checks that the spec's layout and dtype are the op's. Shapes: a C API
// shape function cannot read the spec, so outputs whose size the spec
// gives have an unknown last dimension here, and the Python wrappers set
// it (python/rustfx/spec.py).
//
// The kernels' shared base (ExtractorKernel: the extractor, the document
// source, the feature cache of an op that reads files) and the attrs every
// extractor op declares are in extractor_kernel.h.
#include <cstring>
#include <vector>

#include "dtypes.h"
#include "extractor_kernel.h"
#include "tf_kernel.h"

namespace rustfx {
namespace {

// ---- Dense rows: input.shape + [width] -------------------------------------

// The fixed-width rows of a FeatureSpec's extractor, of shape
// input.shape + [width], in any numeric dtype (`Tout` must be the spec's).
struct DenseRowsOp {
  static constexpr char kName[] = "Rustfx>DenseRows";
  static constexpr Layout kLayout = Layout::Dense;
  static void Shape(TF_ShapeInferenceContext* ctx, TF_Status* status) {
    InputShapePlusUnknown(ctx, 0, status);
  }

  class Kernel : public ExtractorKernel<DenseRowsOp> {
   public:
    static constexpr const char* kName = DenseRowsOp::kName;
    OpStatus Init(TF_OpKernelConstruction* ctx, const Attrs& attrs) {
      RUSTFX_RETURN_IF_ERROR(ExtractorKernel::Init(ctx, attrs));
      return CheckDType(attrs, "Tout", std::nullopt);
    }
    OpStatus Compute(TF_OpKernelContext* ctx) const {
      const Extractor& e = extractor();
      const DTypeInfo& info = Info(e.dtype());
      StringInput input;
      RUSTFX_RETURN_IF_ERROR(GetStringInput(ctx, 0, &input));
      const int64_t width = static_cast<int64_t>(e.width());
      std::vector<int64_t> dims = input.dims;
      dims.push_back(width);
      TensorPtr output;
      RUSTFX_RETURN_IF_ERROR(AllocateOutput(ctx, 0, info.tf, dims, &output));
      uint8_t* rows = Data<uint8_t>(output);
      const size_t row_bytes = static_cast<size_t>(width) * info.size;
      if (cached()) {
        const DocumentChunks chunks = CachedChunks(input);
        std::vector<std::optional<rust::Box<Part>>> parts;
        RUSTFX_RETURN_IF_ERROR(CachedParts(input, chunks, &parts));
        for (int64_t c = 0; c < chunks.count(); ++c) {
          const rust::Slice<const uint8_t> bytes = (*parts[c])->value_bytes();
          const size_t n = static_cast<size_t>(chunks.end(c) - chunks.begin(c));
          if (bytes.size() != n * row_bytes) {
            return Internal(std::string(kName) + ": a cached chunk's rows do not match (a bug)");
          }
          if (!bytes.empty()) std::memcpy(rows + chunks.begin(c) * row_bytes, bytes.data(), bytes.size());
        }
        return {};
      }
      const DocumentChunks chunks = PlanChunks(OpThreads(), source(), input,
                                               e.cost_per_byte(), e.work_bytes_hint());
      return ForEachChunk(kName, source(), input, chunks,
                          [&](int64_t, int64_t first, const DocumentChunk& chunk) {
                            e.write_dense_rows(chunk, rust::Slice<uint8_t>(
                                                          rows + first * row_bytes,
                                                          chunk.len() * row_bytes));
                          });
    }
  };
};

// ---- Ragged rows: values + row_splits over the flattened input -------------

// values: [unknown]; row_splits: [input elements + 1].
void RaggedShape(TF_ShapeInferenceContext* ctx, TF_Status* status) {
  const int64_t n = InputElements(ctx, status);
  if (TF_GetCode(status) != TF_OK) return;
  ShapeHandle values(Vector(ctx, -1)), splits(Vector(ctx, n < 0 ? -1 : n + 1));
  TF_ShapeInferenceContextSetOutput(ctx, 0, values.get(), status);
  if (TF_GetCode(status) != TF_OK) return;
  TF_ShapeInferenceContextSetOutput(ctx, 1, splits.get(), status);
}

// Copies a part's values (of `info`'s dtype) to `out`.
void CopyValues(const Part& part, const DTypeInfo& info, uint8_t* out) {
  const rust::Slice<const uint8_t> bytes = part.value_bytes();
  if (info.tf != TF_STRING) {
    if (!bytes.empty()) std::memcpy(out, bytes.data(), bytes.size());
    return;
  }
  TF_TString* strings = reinterpret_cast<TF_TString*>(out);
  const char* data = reinterpret_cast<const char*>(bytes.data());
  const rust::Slice<const int64_t> ends = part.string_ends();
  int64_t start = 0;
  for (size_t j = 0; j < ends.size(); ++j) {
    TF_TString_Copy(&strings[j], data + start, ends[j] - start);
    start = ends[j];
  }
}

// The values of a FeatureSpec's extractor with a ragged output (hashed
// n-gram ids, byte sequences, printable strings), in any dtype, for every
// element of `input` (read flattened): element i owns
// values[row_splits[i]:row_splits[i+1]]. One kernel serves Rustfx>Ragged
// (its dtype in `Tout`) and the older Rustfx>RaggedIds (int64) and
// Rustfx>RaggedStrings (string), which saved models still name.
struct RaggedKernel {
  template <typename Op>
  class Kernel : public ExtractorKernel<Op> {
    using Base = ExtractorKernel<Op>;

   public:
    static constexpr const char* kName = Op::kName;
    OpStatus Init(TF_OpKernelConstruction* ctx, const Attrs& attrs) {
      RUSTFX_RETURN_IF_ERROR(Base::Init(ctx, attrs));
      return this->CheckDType(attrs, "Tout", Op::kFixed);
    }

    OpStatus Compute(TF_OpKernelContext* ctx) const {
      const Extractor& e = this->extractor();
      const DTypeInfo& info = Info(e.dtype());
      StringInput input;
      RUSTFX_RETURN_IF_ERROR(GetStringInput(ctx, 0, &input));
      const bool numeric = info.tf != TF_STRING;
      const bool countable = numeric && !this->source().reads_files() && e.counts_up_front();
      if (countable) {
        bool done = false;
        RUSTFX_RETURN_IF_ERROR(ComputeInPlace(ctx, e, info, input, &done));
        if (done) return {};
      }
      const DocumentChunks chunks = this->Chunks(input);
      if (numeric && !chunks.parallel && !this->cached()) {
        // Values the output starts with room for.
        int64_t room = 0;
        if (countable) RUSTFX_RETURN_IF_ERROR(MaxValues(e, input, &room));
        return ComputeInOrder(ctx, e, info, input, chunks, room);
      }
      std::vector<std::optional<rust::Box<Part>>> parts;
      RUSTFX_RETURN_IF_ERROR(this->ExtractParts(input, chunks, &parts));
      const int64_t n = chunks.count() > 0 ? chunks.end(chunks.count() - 1) : 0;
      TensorPtr splits;
      RUSTFX_RETURN_IF_ERROR(AllocateOutput(ctx, 1, TF_INT64, {n + 1}, &splits));
      int64_t* splits_flat = Data<int64_t>(splits);
      splits_flat[0] = 0;
      std::vector<int64_t> part_starts(parts.size() + 1, 0);
      for (int64_t c = 0; c < chunks.count(); ++c) {
        const Part& part = **parts[c];
        const int64_t rows = chunks.end(c) - chunks.begin(c);
        const int64_t* ends = part.row_ends().data();
        const int64_t base = part_starts[c];
        for (int64_t j = 0; j < rows; ++j) {
          splits_flat[chunks.begin(c) + j + 1] = base + ends[j];
        }
        part_starts[c + 1] = base + static_cast<int64_t>(part.value_count());
      }
      TensorPtr values;
      RUSTFX_RETURN_IF_ERROR(AllocateOutput(ctx, 0, info.tf, {part_starts.back()}, &values));
      uint8_t* out = Data<uint8_t>(values);
      // Chunks are copied in parallel: they can be larger than the input.
      ForEachRange(chunks.count(), chunks.threads, [&](int64_t begin, int64_t end) {
        for (int64_t c = begin; c < end; ++c) {
          CopyValues(**parts[c], info, out + part_starts[c] * info.size);
        }
      });
      return {};
    }

   private:
    // Chunks run in order on this thread: each chunk's values are copied
    // into `values` as soon as they are made, while in cache, instead of
    // all chunks being kept and copied at the end (10% of whitespace ids of
    // log lines: 21 MB gathered, then read back from memory). `values`
    // grows as needed, sized at each growth for the documents left at the
    // rate so far and an eighth more, from `room` values; the output is its
    // first values (the rest unused, or copied to size when more than half
    // would be).
    OpStatus ComputeInOrder(TF_OpKernelContext* ctx, const Extractor& e, const DTypeInfo& info,
                            const StringInput& input, const DocumentChunks& chunks,
                            int64_t room) const {
      const int64_t n = input.size;
      TensorPtr splits;
      RUSTFX_RETURN_IF_ERROR(AllocateOutput(ctx, 1, TF_INT64, {n + 1}, &splits));
      int64_t* row_splits = Data<int64_t>(splits);
      row_splits[0] = 0;
      ValueBuffer values(ctx, info.tf, info.size);
      RUSTFX_RETURN_IF_ERROR(values.Reserve(room, 0));
      int64_t used = 0;
      std::optional<rust::Box<Part>> part;
      OpStatus status;
      RUSTFX_RETURN_IF_ERROR(ForEachChunk(
          kName, this->source(), input, chunks,
          [&](int64_t, int64_t first, const DocumentChunk& chunk) {
            if (!status.ok()) return;
            if (part) {
              e.refill_part(chunk, **part);
            } else {
              part.emplace(e.extract_part(chunk));
            }
            const int64_t rows = static_cast<int64_t>(chunk.len());
            status = Base::CheckPart(**part, rows);
            if (!status.ok()) return;
            const int64_t* ends = (*part)->row_ends().data();
            for (int64_t j = 0; j < rows; ++j) {
              row_splits[first + j + 1] = used + ends[j];
            }
            const int64_t count = static_cast<int64_t>((*part)->value_count());
            if (used + count > values.capacity()) {
              const int64_t done = first + rows;
              const int64_t expected = used + count + (used + count) / done * (n - done);
              status = values.Reserve(expected + expected / 8, used);
              if (!status.ok()) return;
            }
            CopyValues(**part, info, values.data() + used * info.size);
            used += count;
          }));
      RUSTFX_RETURN_IF_ERROR(status);
      if (used < values.capacity() / 2) RUSTFX_RETURN_IF_ERROR(values.Reserve(used, used));
      return values.SetOutput(0, used);
    }

    // The room ComputeInOrder starts with when `write_row_splits` could
    // not count (a binary's characters): at most as many values as the
    // documents have windows, so `values` never grows (a binary has a
    // character for almost every byte; on compressed files, growing from
    // the first chunks' rate cost 6%). Capped: a larger batch grows.
    static OpStatus MaxValues(const Extractor& e, const StringInput& input, int64_t* room) {
      constexpr uint64_t kMaxPresizedValues = uint64_t{1} << 26;
      try {
        const uint64_t bound =
            e.max_values(DocumentChunk(input.strings, static_cast<size_t>(input.size)));
        *room = static_cast<int64_t>(std::min(bound, kMaxPresizedValues));
      } catch (const std::exception& err) {
        return Internal(std::string(kName) + ": " + err.what());
      }
      return {};
    }

    // Byte and character n-grams, byte sequences: each document's value
    // count is known up front, so the outputs are sized first and each
    // chunk's values are written straight into `values`, not gathered and
    // copied. `*done` stays false, with no output set, when a document's
    // values cannot be counted (the caller gathers).
    OpStatus ComputeInPlace(TF_OpKernelContext* ctx, const Extractor& e, const DTypeInfo& info,
                            const StringInput& input, bool* done) const {
      const int64_t n = input.size;
      ValueBuffer splits(ctx, TF_INT64, sizeof(int64_t));
      RUSTFX_RETURN_IF_ERROR(splits.Reserve(n + 1, 0));
      int64_t* row_splits = reinterpret_cast<int64_t*>(splits.data());
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
      RUSTFX_RETURN_IF_ERROR(AllocateOutput(ctx, 0, info.tf, {total}, &values));
      uint8_t* out = Data<uint8_t>(values);
      const DocumentChunks chunks = this->Chunks(input);
      RUSTFX_RETURN_IF_ERROR(ForEachChunk(
          kName, this->source(), input, chunks,
          [&](int64_t, int64_t first, const DocumentChunk& chunk) {
            const int64_t begin = row_splits[first];
            const int64_t end = row_splits[first + chunk.len()];
            if (end == begin) return;
            e.write_values(chunk, rust::Slice<uint8_t>(out + begin * info.size,
                                                       (end - begin) * info.size));
          }));
      return splits.SetOutput(1, n + 1);
    }
  };
};

// Rustfx>Ragged: the dtype in `Tout`.
struct RaggedRowsOp {
  static constexpr char kName[] = "Rustfx>Ragged";
  static constexpr Layout kLayout = Layout::Ragged;
  static constexpr std::optional<TF_DataType> kFixed = std::nullopt;
};
// The ops of rustfx <= 0.1's saved models: ids and strings.
struct RaggedIdsOp {
  static constexpr char kName[] = "Rustfx>RaggedIds";
  static constexpr Layout kLayout = Layout::Ragged;
  static constexpr std::optional<TF_DataType> kFixed = TF_INT64;
};
struct RaggedStringsOp {
  static constexpr char kName[] = "Rustfx>RaggedStrings";
  static constexpr Layout kLayout = Layout::Ragged;
  static constexpr std::optional<TF_DataType> kFixed = TF_STRING;
};

// ---- Sparse rows: the parts of a tf.SparseTensor ----------------------------

// The sparse rows of a FeatureSpec's extractor (bags of hashed n-grams), as
// the parts of a tf.SparseTensor of dense shape [num_elements, width]
// (input read flattened), indices sorted row-major.
struct SparseRowsOp {
  static constexpr char kName[] = "Rustfx>SparseRows";
  static constexpr Layout kLayout = Layout::Sparse;
  static void Shape(TF_ShapeInferenceContext* ctx, TF_Status* status) {
    ShapeHandle unknown(Vector(ctx, -1)), two(Vector(ctx, 2)), indices;
    TF_ShapeInferenceContextConcatenateShapes(ctx, unknown.get(), two.get(), indices.get(), status);
    if (TF_GetCode(status) == TF_OK) TF_ShapeInferenceContextSetOutput(ctx, 0, indices.get(), status);
    if (TF_GetCode(status) == TF_OK) TF_ShapeInferenceContextSetOutput(ctx, 1, unknown.get(), status);
    if (TF_GetCode(status) == TF_OK) TF_ShapeInferenceContextSetOutput(ctx, 2, two.get(), status);
  }

  class Kernel : public ExtractorKernel<SparseRowsOp> {
   public:
    static constexpr const char* kName = SparseRowsOp::kName;
    OpStatus Init(TF_OpKernelConstruction* ctx, const Attrs& attrs) {
      RUSTFX_RETURN_IF_ERROR(ExtractorKernel::Init(ctx, attrs));
      return CheckDType(attrs, "", TF_FLOAT);
    }
    OpStatus Compute(TF_OpKernelContext* ctx) const {
      const Extractor& e = extractor();
      const DTypeInfo& info = Info(e.dtype());
      StringInput input;
      RUSTFX_RETURN_IF_ERROR(GetStringInput(ctx, 0, &input));
      const DocumentChunks chunks = Chunks(input);
      std::vector<std::optional<rust::Box<Part>>> parts;
      RUSTFX_RETURN_IF_ERROR(ExtractParts(input, chunks, &parts));
      std::vector<int64_t> starts(chunks.count() + 1, 0);
      for (int64_t c = 0; c < chunks.count(); ++c) {
        const Part& part = **parts[c];
        if (part.indices().size() != part.value_count()) {
          return Internal(std::string(kName) + ": indices and values differ (a bug in rustfx)");
        }
        starts[c + 1] = starts[c] + static_cast<int64_t>(part.value_count());
      }
      const int64_t nnz = starts.back();
      TensorPtr indices, values, dense_shape;
      RUSTFX_RETURN_IF_ERROR(AllocateOutput(ctx, 0, TF_INT64, {nnz, 2}, &indices));
      RUSTFX_RETURN_IF_ERROR(AllocateOutput(ctx, 1, info.tf, {nnz}, &values));
      RUSTFX_RETURN_IF_ERROR(AllocateOutput(ctx, 2, TF_INT64, {2}, &dense_shape));
      // Chunks are copied in parallel: they can be larger than the input.
      // Through plain pointers: each rust accessor is a call into Rust.
      int64_t* idx = Data<int64_t>(indices);
      uint8_t* val = Data<uint8_t>(values);
      ForEachRange(chunks.count(), chunks.threads, [&](int64_t begin, int64_t end) {
        for (int64_t c = begin; c < end; ++c) {
          const Part& part = **parts[c];
          const uint64_t* cols = part.indices().data();
          const int64_t* ends = part.row_ends().data();
          int64_t* out = idx + 2 * starts[c];
          int64_t j = 0;
          for (int64_t r = 0; r < chunks.end(c) - chunks.begin(c); ++r) {
            const int64_t row = chunks.begin(c) + r;
            for (; j < ends[r]; ++j) {
              out[2 * j] = row;
              // Below the width <= int64 max (NgramHasher::new).
              out[2 * j + 1] = static_cast<int64_t>(cols[j]);
            }
          }
          CopyValues(part, info, val + starts[c] * info.size);
        }
      });
      Data<int64_t>(dense_shape)[0] = input.size;
      Data<int64_t>(dense_shape)[1] = static_cast<int64_t>(e.width());
      return {};
    }
  };
};

// ---- Registration ------------------------------------------------------------

// "Tout: {float, int64, ...}": every dtype of the table (strings only
// `with_strings`).
std::string TypeAttr(bool with_strings) {
  std::string attr = "Tout: {";
  for (const DTypeInfo& info : kDTypes) {
    if (info.tf == TF_STRING && !with_strings) continue;
    if (attr.back() != '{') attr += ", ";
    attr += info.attr_name;
  }
  return attr + "}";
}

void RegisterExtractorOps() {
  static const std::string numeric = TypeAttr(false);
  static const std::string any = TypeAttr(true);
  RegisterOp({DenseRowsOp::kName,
              {"input: string"},
              {"features: Tout"},
              ExtractorAttrs({numeric.c_str()}),
              DenseRowsOp::Shape});
  RegisterKernel<DenseRowsOp::Kernel>(DenseRowsOp::kName, "RustfxDenseRows");

  RegisterOp({RaggedRowsOp::kName,
              {"input: string"},
              {"values: Tout", "row_splits: int64"},
              ExtractorAttrs({any.c_str()}),
              RaggedShape});
  RegisterKernel<RaggedKernel::Kernel<RaggedRowsOp>>(RaggedRowsOp::kName, "RustfxRagged");

  RegisterOp({RaggedIdsOp::kName,
              {"input: string"},
              {"values: int64", "row_splits: int64"},
              ExtractorAttrs(),
              RaggedShape});
  RegisterKernel<RaggedKernel::Kernel<RaggedIdsOp>>(RaggedIdsOp::kName, "RustfxRaggedIds");

  RegisterOp({RaggedStringsOp::kName,
              {"input: string"},
              {"values: string", "row_splits: int64"},
              ExtractorAttrs(),
              RaggedShape});
  RegisterKernel<RaggedKernel::Kernel<RaggedStringsOp>>(RaggedStringsOp::kName,
                                                        "RustfxRaggedStrings");

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
