// The extractor ops: one op per output kind, serving every extractor of the
// core's registry. Each takes its documents (`input`, or the files it names:
// RUSTFX_SOURCE_ATTRS) and one `spec` attr, a FeatureSpec's JSON, which the
// core parses, checks (output version included) and builds. So a new
// extractor needs no C++: the registry entry in src/registry.rs is enough,
// and a SavedModel carries the spec of every extractor it uses.
//
// An op is a struct declaring its name, outputs, doc and shape; one macro
// registers the op (with the attrs every extractor op shares) and its
// kernel. The kernel checks that the spec's output kind is the op's.
#include <cstring>
#include <vector>

#include "rustfx_kernel.h"
#include "tensorflow/core/framework/op.h"

namespace rustfx {
namespace {

using tensorflow::DataType;
using tensorflow::OpKernel;
using tensorflow::OpKernelConstruction;
using tensorflow::OpKernelContext;
using tensorflow::Tensor;
using tensorflow::TensorShape;
using tensorflow::tstring;
using tensorflow::shape_inference::DimensionHandle;
using tensorflow::shape_inference::InferenceContext;

// Builds the extractor of the `spec` attr and checks that `accepts(kind)`;
// else InvalidArgument naming the op that serves this spec.
template <typename AttrSource>
absl::Status BuildExtractor(AttrSource* attrs, const char* op,
                            bool (*accepts)(OutputKind),
                            std::optional<rust::Box<Extractor>>* extractor) {
  std::string spec;
  TF_RETURN_IF_ERROR(attrs->GetAttr("spec", &spec));
  TF_RETURN_IF_ERROR(InvalidArgumentIfThrows([&] { extractor->emplace(new_extractor(spec)); }));
  if (!accepts((**extractor)->output_kind())) {
    return absl::InvalidArgumentError(std::string(op) +
                                      " cannot serve this spec's output kind; "
                                      "use rustfx.extract(spec, ...), which picks the op: " +
                                      spec);
  }
  return absl::OkStatus();
}

// Registers an extractor op struct: the op (input, spec, source attrs, then
// the struct's outputs and attrs, doc and shape) and its CPU kernel.
#define RUSTFX_EXTRACTOR_OP(Op)                                               \
  REGISTER_KERNEL_BUILDER(Name(Op::kName).Device(tensorflow::DEVICE_CPU),    \
                          Op::Kernel);                                       \
  REGISTER_OP(Op::kName)                                                     \
      .Input("input: string")                                                \
      .Attr("spec: string")                                                  \
      .RUSTFX_SOURCE_ATTRS.Doc(Op::kDoc)                                     \
      .SetShapeFn(Op::Shape)

// The state every extractor kernel holds: the immutable Rust extractor and
// document source built from the attrs, so concurrent Compute calls are safe.
template <typename Op>
class ExtractorKernel : public OpKernel {
 public:
  explicit ExtractorKernel(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, BuildExtractor(ctx, Op::kName, Op::Accepts, &extractor_));
    OP_REQUIRES_OK(ctx, GetDocumentSource(ctx, &source_));
  }

 protected:
  const Extractor& extractor() const { return **extractor_; }
  const DocumentSource& source() const { return **source_; }

  // The input's chunks (PlanChunks).
  DocumentChunks Chunks(OpKernelContext* ctx) const {
    return PlanChunks(ctx, source(), ctx->input(0).flat<tstring>(), extractor().cost_per_byte());
  }

  // The ragged and sparse kernels' first half: each of `chunks` extracted
  // by `fill(chunk, part)` into a Part of its own. A Part has `row_ends`
  // (one per document, cumulative), `value_count()` and `Consistent()`
  // (see CheckPart).
  template <typename Part, typename Fill>
  absl::Status ExtractParts(OpKernelContext* ctx, const DocumentChunks& chunks,
                            std::vector<Part>* parts, Fill fill) const {
    auto docs = ctx->input(0).flat<tstring>();
    parts->resize(chunks.count());
    TF_RETURN_IF_ERROR(ForEachChunk(
        ctx, source(), docs, chunks,
        [&](int64_t c, int64_t, const DocumentChunk& chunk) { fill(chunk, (*parts)[c]); }));
    for (int64_t c = 0; c < chunks.count(); ++c) {
      TF_RETURN_IF_ERROR(CheckPart((*parts)[c], chunks.end(c) - chunks.begin(c)));
    }
    return absl::OkStatus();
  }

  // A part that does not match its `rows` documents is a bug in rustfx,
  // reported as Internal rather than copied out.
  template <typename Part>
  static absl::Status CheckPart(const Part& part, int64_t rows) {
    const uint64_t last_end = rows == 0 ? 0 : part.row_ends.data()[rows - 1];
    if (static_cast<int64_t>(part.row_ends.size()) != rows || last_end != part.value_count() ||
        !part.Consistent()) {
      return absl::InternalError(std::string(Op::kName) +
                                 ": a chunk's rows do not match its documents (a bug in rustfx)");
    }
    return absl::OkStatus();
  }

 private:
  std::optional<rust::Box<Extractor>> extractor_;
  std::optional<rust::Box<DocumentSource>> source_;
};

// Shape functions build the extractor too, so a bad spec fails at graph
// construction with the core's message.
template <typename Op>
absl::Status CheckedExtractor(InferenceContext* c,
                              std::optional<rust::Box<Extractor>>* extractor) {
  std::optional<rust::Box<DocumentSource>> source;
  TF_RETURN_IF_ERROR(BuildExtractor(c, Op::kName, Op::Accepts, extractor));
  return GetDocumentSource(c, &source);
}

// ---- Dense rows: input.shape + [width] -------------------------------------

template <typename T>
struct DenseValue;
template <>
struct DenseValue<float> {
  static constexpr OutputKind kKind = OutputKind::Float32Rows;
  static void Write(const Extractor& e, const DocumentChunk& docs, rust::Slice<float> rows) {
    e.write_f32_rows(docs, rows);
  }
};
template <>
struct DenseValue<int32_t> {
  static constexpr OutputKind kKind = OutputKind::Int32Rows;
  static void Write(const Extractor& e, const DocumentChunk& docs, rust::Slice<int32_t> rows) {
    e.write_i32_rows(docs, rows);
  }
};
template <>
struct DenseValue<int64_t> {
  static constexpr OutputKind kKind = OutputKind::Int64Rows;
  static void Write(const Extractor& e, const DocumentChunk& docs, rust::Slice<int64_t> rows) {
    e.write_i64_rows(docs, rows);
  }
};

struct DenseRowsOp {
  static constexpr char kName[] = "Rustfx>DenseRows";
  static constexpr char kDoc[] = R"doc(
The fixed-width rows of a FeatureSpec's extractor (float32, int32 or int64,
`Tout` must be the spec's dtype), of shape input.shape + [width].
)doc";
  static bool Accepts(OutputKind kind) {
    return kind == OutputKind::Float32Rows || kind == OutputKind::Int32Rows ||
           kind == OutputKind::Int64Rows;
  }
  static absl::Status Shape(InferenceContext* c) {
    std::optional<rust::Box<Extractor>> extractor;
    TF_RETURN_IF_ERROR(CheckedExtractor<DenseRowsOp>(c, &extractor));
    return AppendDim(c, static_cast<int64_t>((*extractor)->width()));
  }

  template <typename T>
  class Kernel : public ExtractorKernel<DenseRowsOp> {
   public:
    explicit Kernel(OpKernelConstruction* ctx) : ExtractorKernel(ctx) {
      if (!ctx->status().ok()) return;
      OP_REQUIRES(ctx, extractor().output_kind() == DenseValue<T>::kKind,
                  absl::InvalidArgumentError("Tout is not the spec's output dtype"));
    }
    void Compute(OpKernelContext* ctx) override {
      const Extractor& e = extractor();
      ComputeRows<T>(ctx, source(), static_cast<int64_t>(e.width()), e.cost_per_byte(),
                     e.work_bytes_hint(), [&e](const DocumentChunk& docs, rust::Slice<T> rows) {
                       DenseValue<T>::Write(e, docs, rows);
                     });
    }
  };
};

REGISTER_OP(DenseRowsOp::kName)
    .Input("input: string")
    .Attr("spec: string")
    .RUSTFX_SOURCE_ATTRS
    .Attr("Tout: {float, int32, int64}")
    .Output("features: Tout")
    .SetShapeFn(DenseRowsOp::Shape)
    .Doc(DenseRowsOp::kDoc);
#define RUSTFX_DENSE_KERNEL(T)                                                  \
  REGISTER_KERNEL_BUILDER(Name(DenseRowsOp::kName)                              \
                              .Device(tensorflow::DEVICE_CPU)                   \
                              .TypeConstraint<T>("Tout"),                       \
                          DenseRowsOp::Kernel<T>)
RUSTFX_DENSE_KERNEL(float);
RUSTFX_DENSE_KERNEL(int32_t);
RUSTFX_DENSE_KERNEL(int64_t);

// ---- Ragged rows: values + row_splits over the flattened input -------------

// The parts of a ragged output (checked by ExtractParts): chunk c's
// `row_ends` and its `value_count()` values, copied by `copy(part, out_begin)`
// into output `values_index` as one flat tensor, with row_splits at
// `values_index + 1`.
template <typename T, typename Part, typename Copy>
void EmitRagged(OpKernelContext* ctx, const DocumentChunks& chunks, const std::vector<Part>& parts,
                int values_index, Copy copy) {
  const int64_t n = chunks.count() > 0 ? chunks.end(chunks.count() - 1) : 0;
  Tensor* splits = nullptr;
  OP_REQUIRES_OK(ctx, ctx->allocate_output(values_index + 1, TensorShape({n + 1}), &splits));
  int64_t* splits_flat = splits->flat<int64_t>().data();
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
  Tensor* values = nullptr;
  OP_REQUIRES_OK(ctx, ctx->allocate_output(values_index, TensorShape({part_starts.back()}),
                                           &values));
  T* out = values->flat<T>().data();
  ForEachElement(ctx, chunks.count(), 100000,
                 [&](int64_t c) { copy(parts[c], out + part_starts[c]); });
}

absl::Status RaggedShape(InferenceContext* c) {
  DimensionHandle splits;
  TF_RETURN_IF_ERROR(c->Add(c->NumElements(c->input(0)), 1, &splits));
  c->set_output(0, c->Vector(InferenceContext::kUnknownDim));
  c->set_output(1, c->Vector(splits));
  return absl::OkStatus();
}

struct RaggedIdsOp {
  static constexpr char kName[] = "Rustfx>RaggedIds";
  static constexpr char kDoc[] = R"doc(
The int64 ids of a FeatureSpec's extractor with a ragged output (hashed
n-grams), for every element of `input` (read flattened): element i owns
values[row_splits[i]:row_splits[i+1]].
)doc";
  static bool Accepts(OutputKind kind) { return kind == OutputKind::RaggedIds; }
  static absl::Status Shape(InferenceContext* c) {
    std::optional<rust::Box<Extractor>> extractor;
    TF_RETURN_IF_ERROR(CheckedExtractor<RaggedIdsOp>(c, &extractor));
    return RaggedShape(c);
  }

  // A chunk's ids, end to end, and where each document's end.
  struct IdRows {
    rust::Vec<int64_t> ids;
    rust::Vec<uint64_t> row_ends;
    size_t value_count() const { return ids.size(); }
    bool Consistent() const { return true; }
  };

  class Kernel : public ExtractorKernel<RaggedIdsOp> {
   public:
    using ExtractorKernel::ExtractorKernel;
    void Compute(OpKernelContext* ctx) override {
      const Extractor& e = extractor();
      const bool countable = !source().reads_files() && e.counts_ids_up_front();
      if (countable) {
        bool done = false;
        OP_REQUIRES_OK(ctx, ComputeInPlace(ctx, e, &done));
        if (done) return;
      }
      const DocumentChunks chunks = Chunks(ctx);
      if (!chunks.parallel) {
        // Ids the output starts with room for.
        int64_t room = 0;
        if (countable) OP_REQUIRES_OK(ctx, MaxIds(ctx, e, &room));
        OP_REQUIRES_OK(ctx, ComputeInOrder(ctx, e, chunks, room));
        return;
      }
      std::vector<IdRows> parts;
      OP_REQUIRES_OK(ctx, ExtractParts(ctx, chunks, &parts,
                                       [&e](const DocumentChunk& chunk, IdRows& part) {
                                         e.append_id_rows(chunk, part.ids, part.row_ends);
                                       }));
      EmitRagged<int64_t>(ctx, chunks, parts, 0, [](const IdRows& part, int64_t* out) {
        if (!part.ids.empty()) std::memcpy(out, part.ids.data(), part.ids.size() * sizeof(int64_t));
      });
    }

   private:
    // Chunks run in order on this thread: each chunk's ids are copied into
    // `values` as soon as they are made, while in cache, instead of all
    // chunks being kept and copied at the end (10% of whitespace ids of
    // log lines: 21 MB gathered, then read back from memory). `values`
    // grows as needed, sized at each growth for the documents left at the
    // rate so far and an eighth more, from `room` ids; the output is its
    // first ids (a view of it, the rest unused, or a copy when more than
    // half would be).
    absl::Status ComputeInOrder(OpKernelContext* ctx, const Extractor& e,
                                const DocumentChunks& chunks, int64_t room) {
      auto docs = ctx->input(0).flat<tstring>();
      const int64_t n = docs.size();
      Tensor* splits = nullptr;
      TF_RETURN_IF_ERROR(ctx->allocate_output(1, TensorShape({n + 1}), &splits));
      int64_t* row_splits = splits->flat<int64_t>().data();
      row_splits[0] = 0;
      Tensor values;
      TF_RETURN_IF_ERROR(ctx->allocate_temp(tensorflow::DT_INT64, TensorShape({room}), &values));
      int64_t used = 0;
      IdRows part;
      absl::Status status;
      TF_RETURN_IF_ERROR(ForEachChunk(
          ctx, source(), docs, chunks, [&](int64_t, int64_t first, const DocumentChunk& chunk) {
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
            if (used + count > values.NumElements()) {
              const int64_t done = first + rows;
              const int64_t expected = used + count + (used + count) / done * (n - done);
              status = Grow(ctx, used, expected + expected / 8, &values);
              if (!status.ok()) return;
            }
            if (count > 0) {
              std::memcpy(values.flat<int64_t>().data() + used, part.ids.data(),
                          count * sizeof(int64_t));
            }
            used += count;
          }));
      TF_RETURN_IF_ERROR(status);
      if (used < values.NumElements() / 2) TF_RETURN_IF_ERROR(Grow(ctx, used, used, &values));
      ctx->set_output(0, used == values.NumElements() ? values : values.Slice(0, used));
      return absl::OkStatus();
    }

    // The room ComputeInOrder starts with when `write_row_splits` could
    // not count (a binary's characters): at most as many ids as the
    // documents have windows, so `values` never grows (a binary has a
    // character for almost every byte; on compressed files, growing from
    // the first chunks' rate cost 6%). Capped: a larger batch grows.
    absl::Status MaxIds(OpKernelContext* ctx, const Extractor& e, int64_t* room) {
      constexpr uint64_t kMaxPresizedIds = uint64_t{1} << 26;  // 512 MiB
      auto docs = ctx->input(0).flat<tstring>();
      try {
        const uint64_t bound = e.max_ids(DocumentChunk(docs.data(), static_cast<size_t>(docs.size())));
        *room = static_cast<int64_t>(std::min(bound, kMaxPresizedIds));
      } catch (const std::exception& err) {
        return absl::InternalError(std::string(kName) + ": " + err.what());
      }
      return absl::OkStatus();
    }

    // Replaces `values` by a tensor of `size` ids holding its first `used`.
    static absl::Status Grow(OpKernelContext* ctx, int64_t used, int64_t size, Tensor* values) {
      Tensor bigger;
      TF_RETURN_IF_ERROR(ctx->allocate_temp(tensorflow::DT_INT64, TensorShape({size}), &bigger));
      if (used > 0) {
        std::memcpy(bigger.flat<int64_t>().data(), values->flat<int64_t>().data(),
                    used * sizeof(int64_t));
      }
      *values = bigger;
      return absl::OkStatus();
    }

    // Byte and character n-grams: each document's id count (its windows)
    // is known up front, so the outputs are sized first and each
    // chunk's ids are written straight into `values`, not gathered and
    // copied (8 bytes per n-gram). `*done` stays false, with no output
    // set, when a document's ids cannot be counted (the caller gathers).
    absl::Status ComputeInPlace(OpKernelContext* ctx, const Extractor& e, bool* done) {
      auto docs = ctx->input(0).flat<tstring>();
      const int64_t n = docs.size();
      Tensor splits;
      TF_RETURN_IF_ERROR(ctx->allocate_temp(tensorflow::DT_INT64, TensorShape({n + 1}), &splits));
      int64_t* row_splits = splits.flat<int64_t>().data();
      try {
        if (!e.write_row_splits(DocumentChunk(docs.data(), static_cast<size_t>(n)),
                                rust::Slice<int64_t>(row_splits, static_cast<size_t>(n + 1)))) {
          return absl::OkStatus();
        }
      } catch (const std::exception& err) {
        return absl::InvalidArgumentError(std::string(kName) + ": " + err.what());
      }
      *done = true;
      ctx->set_output(1, splits);
      Tensor* values = nullptr;
      TF_RETURN_IF_ERROR(ctx->allocate_output(0, TensorShape({row_splits[n]}), &values));
      int64_t* out = values->flat<int64_t>().data();
      const DocumentChunks chunks = PlanChunks(ctx, source(), docs, e.cost_per_byte());
      return ForEachChunk(ctx, source(), docs, chunks,
                          [&](int64_t, int64_t first, const DocumentChunk& chunk) {
                            const int64_t begin = row_splits[first];
                            const int64_t end = row_splits[first + chunk.len()];
                            if (end == begin) return;
                            e.write_id_rows(chunk, rust::Slice<int64_t>(out + begin, end - begin));
                          });
    }
  };
};
RUSTFX_EXTRACTOR_OP(RaggedIdsOp).Output("values: int64").Output("row_splits: int64");

struct RaggedStringsOp {
  static constexpr char kName[] = "Rustfx>RaggedStrings";
  static constexpr char kDoc[] = R"doc(
The strings of a FeatureSpec's extractor with a ragged string output
(printable strings), for every element of `input` (read flattened): element
i owns values[row_splits[i]:row_splits[i+1]].
)doc";
  static bool Accepts(OutputKind kind) { return kind == OutputKind::RaggedStrings; }
  static absl::Status Shape(InferenceContext* c) {
    std::optional<rust::Box<Extractor>> extractor;
    TF_RETURN_IF_ERROR(CheckedExtractor<RaggedStringsOp>(c, &extractor));
    return RaggedShape(c);
  }

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
    using ExtractorKernel::ExtractorKernel;
    void Compute(OpKernelContext* ctx) override {
      const Extractor& e = extractor();
      const DocumentChunks chunks = Chunks(ctx);
      std::vector<StringRows> parts;
      OP_REQUIRES_OK(ctx, ExtractParts(ctx, chunks, &parts,
                                       [&e](const DocumentChunk& chunk, StringRows& part) {
                                         e.append_string_rows(chunk, part.bytes, part.ends,
                                                              part.row_ends);
                                       }));
      EmitRagged<tstring>(ctx, chunks, parts, 0, [](const StringRows& part, tstring* out) {
        const char* bytes = reinterpret_cast<const char*>(part.bytes.data());
        const uint64_t* ends = part.ends.data();
        uint64_t start = 0;
        for (size_t j = 0; j < part.ends.size(); ++j) {
          out[j].assign(bytes + start, ends[j] - start);
          start = ends[j];
        }
      });
    }
  };
};
RUSTFX_EXTRACTOR_OP(RaggedStringsOp).Output("values: string").Output("row_splits: int64");

// ---- Sparse rows: the parts of a tf.SparseTensor ----------------------------

struct SparseRowsOp {
  static constexpr char kName[] = "Rustfx>SparseRows";
  static constexpr char kDoc[] = R"doc(
The sparse rows of a FeatureSpec's extractor (bags of hashed n-grams), as the
parts of a tf.SparseTensor of dense shape [num_elements, width] (input read
flattened), indices sorted row-major.
)doc";
  static bool Accepts(OutputKind kind) { return kind == OutputKind::SparseRows; }
  static absl::Status Shape(InferenceContext* c) {
    std::optional<rust::Box<Extractor>> extractor;
    TF_RETURN_IF_ERROR(CheckedExtractor<SparseRowsOp>(c, &extractor));
    c->set_output(0, c->Matrix(InferenceContext::kUnknownDim, 2));
    c->set_output(1, c->Vector(InferenceContext::kUnknownDim));
    c->set_output(2, c->Vector(2));
    return absl::OkStatus();
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
    using ExtractorKernel::ExtractorKernel;
    void Compute(OpKernelContext* ctx) override {
      const Extractor& e = extractor();
      const DocumentChunks chunks = Chunks(ctx);
      std::vector<SparseParts> parts;
      OP_REQUIRES_OK(ctx, ExtractParts(ctx, chunks, &parts,
                                       [&e](const DocumentChunk& chunk, SparseParts& part) {
                                         e.append_sparse_rows(chunk, part.indices, part.values,
                                                              part.row_ends);
                                       }));
      std::vector<int64_t> starts(chunks.count() + 1, 0);
      for (int64_t c = 0; c < chunks.count(); ++c) {
        starts[c + 1] = starts[c] + static_cast<int64_t>(parts[c].value_count());
      }
      Tensor *indices = nullptr, *values = nullptr, *dense_shape = nullptr;
      const int64_t nnz = starts.back();
      OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({nnz, 2}), &indices));
      OP_REQUIRES_OK(ctx, ctx->allocate_output(1, TensorShape({nnz}), &values));
      OP_REQUIRES_OK(ctx, ctx->allocate_output(2, TensorShape({2}), &dense_shape));
      // Chunks are copied in parallel: they can be larger than the input.
      // Through plain pointers: each rust::Vec access is a call into Rust.
      int64_t* idx = indices->matrix<int64_t>().data();
      float* val = values->flat<float>().data();
      ForEachElement(ctx, chunks.count(), 100000, [&](int64_t c) {
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
      });
      dense_shape->flat<int64_t>()(0) = ctx->input(0).NumElements();
      dense_shape->flat<int64_t>()(1) = static_cast<int64_t>(e.width());
    }
  };
};
RUSTFX_EXTRACTOR_OP(SparseRowsOp)
    .Output("indices: int64")
    .Output("values: float")
    .Output("dense_shape: int64");

// ---- What Python asks of the core -------------------------------------------

// Rustfx>SpecQuery: the registry, a spec's canonical JSON, or its feature
// names (the core's spec::query). A refusal is an answer, not an op error:
// element 0 is the core's error message ("" when the query succeeded), so
// Python raises it as InvalidArgument without TF logging a failed kernel.
// Python runs it eagerly.
class SpecQueryKernel : public OpKernel {
 public:
  explicit SpecQueryKernel(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr("query", &query_));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("spec", &spec_));
  }
  void Compute(OpKernelContext* ctx) override {
    std::vector<std::string> answer{""};
    try {
      for (const auto& line : spec_query(query_, spec_)) answer.emplace_back(line);
    } catch (const rust::Error& e) {
      answer = {e.what()};
    }
    Tensor* out = nullptr;
    const int64_t n = static_cast<int64_t>(answer.size());
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({n}), &out));
    for (int64_t i = 0; i < n; ++i) out->flat<tstring>()(i) = answer[i];
  }

 private:
  std::string query_, spec_;
};

REGISTER_OP("Rustfx>SpecQuery")
    .Output("answer: string")
    .Attr("query: string")
    .Attr("spec: string = ''")
    .SetIsStateful()  // Not constant-folded or cached away: an answer per call.
    .SetShapeFn([](InferenceContext* c) {
      c->set_output(0, c->Vector(InferenceContext::kUnknownDim));
      return absl::OkStatus();
    })
    .Doc(R"doc(
Asks the core: query='registry' (every extractor, its parameters, defaults
and output version, as JSON), 'spec' (the canonical JSON of `spec`: defaults
filled in, checked) or 'feature_names' (the name of each value of `spec`'s
rows). answer[0] is the core's error message, "" on success; the answer
follows it.
)doc");
REGISTER_KERNEL_BUILDER(Name("Rustfx>SpecQuery").Device(tensorflow::DEVICE_CPU),
                        SpecQueryKernel);

}  // namespace
}  // namespace rustfx
