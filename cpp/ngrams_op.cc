// Hashed n-gram ops, one per output of rustfx.hashed_ngrams:
// HashedNgrams (ragged), HashedNgramSequence and HashedNgramCounts
// (fixed-width, served by RowKernel) and HashedNgramSparseCounts.
#include <cstring>
#include <vector>

#include "rustfx_kernel.h"
#include "tensorflow/core/framework/op.h"

namespace rustfx {
namespace {

using tensorflow::OpKernel;
using tensorflow::OpKernelConstruction;
using tensorflow::OpKernelContext;
using tensorflow::Tensor;
using tensorflow::TensorShape;
using tensorflow::tstring;
using tensorflow::shape_inference::DimensionHandle;
using tensorflow::shape_inference::InferenceContext;

// The attrs every n-gram op has, declared here and read by GetNgramParams.
#define RUSTFX_NGRAM_ATTRS                          \
  Attr("num_buckets: int")                          \
      .Attr("ngram_widths: list(int) = [1]")        \
      .Attr("tokenizer: string = 'whitespace'")     \
      .Attr("lowercase: bool = false")              \
      .Attr("hash: string = 'fingerprint64'")

template <typename AttrSource>
absl::Status GetNgramParams(AttrSource* attrs, NgramParams* params) {
  std::vector<int64_t> widths;
  TF_RETURN_IF_ERROR(attrs->GetAttr("num_buckets", &params->num_buckets));
  TF_RETURN_IF_ERROR(attrs->GetAttr("ngram_widths", &widths));
  TF_RETURN_IF_ERROR(
      GetEnumAttr(attrs, "tokenizer", parse_tokenizer, &params->tokenizer));
  TF_RETURN_IF_ERROR(attrs->GetAttr("lowercase", &params->lowercase));
  TF_RETURN_IF_ERROR(GetEnumAttr(attrs, "hash", parse_hash_family, &params->hash));
  params->widths.clear();
  for (int64_t w : widths) params->widths.push_back(w);
  return absl::OkStatus();
}

// The weighting attrs of the two counts outputs, read by GetCountParams.
#define RUSTFX_COUNT_ATTRS                          \
  Attr("binary: bool = false")                      \
      .Attr("alternate_sign: bool = false")         \
      .Attr("norm: string = 'none'")

template <typename AttrSource>
absl::Status GetCountParams(AttrSource* attrs, CountParams* params) {
  TF_RETURN_IF_ERROR(attrs->GetAttr("binary", &params->binary));
  TF_RETURN_IF_ERROR(attrs->GetAttr("alternate_sign", &params->alternate_sign));
  return GetEnumAttr(attrs, "norm", parse_norm, &params->norm);
}

// ---- output="ragged" --------------------------------------------------------

template <typename AttrSource>
absl::Status BuildRagged(AttrSource* attrs,
                         std::optional<rust::Box<NgramRagged>>* op) {
  NgramParams params;
  TF_RETURN_IF_ERROR(GetNgramParams(attrs, &params));
  return InvalidArgumentIfThrows([&] { op->emplace(new_ngram_ragged(params)); });
}

constexpr char kRaggedName[] = "Rustfx>HashedNgrams";

REGISTER_OP(kRaggedName)
    .Input("input: string")
    .RUSTFX_SOURCE_ATTRS
    .Output("values: int64")
    .Output("row_splits: int64")
    .RUSTFX_NGRAM_ATTRS
    .SetShapeFn([](InferenceContext* c) -> absl::Status {
      std::optional<rust::Box<NgramRagged>> op;
      std::optional<rust::Box<DocumentSource>> source;
      TF_RETURN_IF_ERROR(BuildRagged(c, &op));
      TF_RETURN_IF_ERROR(GetDocumentSource(c, &source));
      DimensionHandle splits;
      TF_RETURN_IF_ERROR(c->Add(c->NumElements(c->input(0)), 1, &splits));
      c->set_output(0, c->Vector(InferenceContext::kUnknownDim));
      c->set_output(1, c->Vector(splits));
      return absl::OkStatus();
    })
    .Doc(R"doc(
Hashed n-gram ids of every element of `input` (any shape, read flattened), as
ragged rows: element i owns values[row_splits[i]:row_splits[i+1]]. See
python/rustfx for the parameters and the TensorFlow / scikit-learn parity.
)doc");

class HashedNgramsKernel : public OpKernel {
 public:
  explicit HashedNgramsKernel(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, BuildRagged(ctx, &op_));
    OP_REQUIRES_OK(ctx, GetDocumentSource(ctx, &source_));
  }

  void Compute(OpKernelContext* ctx) override {
    auto docs = ctx->input(0).flat<tstring>();
    const int64_t n = docs.size();
    const NgramRagged& op = **op_;
    std::vector<rust::Vec<int64_t>> rows(n);
    OP_REQUIRES_OK(ctx, ForEachRustCall(ctx, **source_, docs, 20,
                                        [&](int64_t i, rust::Slice<const uint8_t> doc) {
                                          op.append_ids(doc, rows[i]);
                                        }));

    Tensor* splits = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(1, TensorShape({n + 1}), &splits));
    auto splits_flat = splits->flat<int64_t>();
    splits_flat(0) = 0;
    for (int64_t i = 0; i < n; ++i) {
      splits_flat(i + 1) = splits_flat(i) + static_cast<int64_t>(rows[i].size());
    }
    Tensor* values = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({splits_flat(n)}),
                                             &values));
    // Copied in parallel too: the ids are often larger than the input.
    int64_t* out = values->flat<int64_t>().data();
    ForEachElement(ctx, n, 1000, [&](int64_t i) {
      if (!rows[i].empty()) {
        std::memcpy(out + splits_flat(i), rows[i].data(),
                    rows[i].size() * sizeof(int64_t));
      }
    });
  }

 private:
  std::optional<rust::Box<NgramRagged>> op_;
  std::optional<rust::Box<DocumentSource>> source_;
};

REGISTER_KERNEL_BUILDER(Name(kRaggedName).Device(tensorflow::DEVICE_CPU),
                        HashedNgramsKernel);

// ---- output="sequence" ------------------------------------------------------

struct HashedNgramSequenceOp {
  static constexpr char kName[] = "Rustfx>HashedNgramSequence";
  static constexpr int64_t kCostPerByte = 20;
  using Rows = Int64Rows;

  template <typename AttrSource>
  static absl::Status Build(AttrSource* attrs,
                            std::optional<rust::Box<Rows>>* rows) {
    NgramParams params;
    int64_t max_tokens = 0, pad_value = 0;
    TF_RETURN_IF_ERROR(GetNgramParams(attrs, &params));
    TF_RETURN_IF_ERROR(attrs->GetAttr("max_tokens", &max_tokens));
    TF_RETURN_IF_ERROR(attrs->GetAttr("pad_value", &pad_value));
    return InvalidArgumentIfThrows([&] {
      rows->emplace(new_ngram_sequence(params, max_tokens, pad_value));
    });
  }
};

REGISTER_OP(HashedNgramSequenceOp::kName)
    .Input("input: string")
    .RUSTFX_SOURCE_ATTRS
    .Output("ids: int64")
    .RUSTFX_NGRAM_ATTRS
    .Attr("max_tokens: int")
    .Attr("pad_value: int = -1")
    .SetShapeFn(RowShape<HashedNgramSequenceOp>)
    .Doc(R"doc(
The first `max_tokens` hashed n-gram ids of each element, padded with
`pad_value` (which can never be a bucket id), of shape input.shape + [max_tokens].
)doc");
RUSTFX_REGISTER_ROW_KERNEL(HashedNgramSequenceOp);

// ---- output="counts" --------------------------------------------------------

struct HashedNgramCountsOp {
  static constexpr char kName[] = "Rustfx>HashedNgramCounts";
  static constexpr int64_t kCostPerByte = 25;
  using Rows = FloatRows;

  template <typename AttrSource>
  static absl::Status Build(AttrSource* attrs,
                            std::optional<rust::Box<Rows>>* rows) {
    NgramParams params;
    CountParams counts;
    TF_RETURN_IF_ERROR(GetNgramParams(attrs, &params));
    TF_RETURN_IF_ERROR(GetCountParams(attrs, &counts));
    return InvalidArgumentIfThrows(
        [&] { rows->emplace(new_ngram_counts(params, counts)); });
  }
};

REGISTER_OP(HashedNgramCountsOp::kName)
    .Input("input: string")
    .RUSTFX_SOURCE_ATTRS
    .Output("counts: float")
    .RUSTFX_NGRAM_ATTRS
    .RUSTFX_COUNT_ATTRS
    .SetShapeFn(RowShape<HashedNgramCountsOp>)
    .Doc(R"doc(
Bag of hashed n-grams of each element as a dense float32 row of num_buckets
counts (optionally binary, signed, l1/l2-normalised like scikit-learn).
The output has shape input.shape + [num_buckets].
)doc");
RUSTFX_REGISTER_ROW_KERNEL(HashedNgramCountsOp);

// ---- output="sparse" --------------------------------------------------------

template <typename AttrSource>
absl::Status BuildSparse(AttrSource* attrs, int64_t* num_buckets,
                         std::optional<rust::Box<NgramSparse>>* op) {
  NgramParams params;
  CountParams counts;
  TF_RETURN_IF_ERROR(GetNgramParams(attrs, &params));
  TF_RETURN_IF_ERROR(GetCountParams(attrs, &counts));
  *num_buckets = params.num_buckets;
  return InvalidArgumentIfThrows(
      [&] { op->emplace(new_ngram_sparse(params, counts)); });
}

constexpr char kSparseName[] = "Rustfx>HashedNgramSparseCounts";

REGISTER_OP(kSparseName)
    .Input("input: string")
    .RUSTFX_SOURCE_ATTRS
    .Output("indices: int64")
    .Output("values: float")
    .Output("dense_shape: int64")
    .RUSTFX_NGRAM_ATTRS
    .RUSTFX_COUNT_ATTRS
    .SetShapeFn([](InferenceContext* c) -> absl::Status {
      int64_t num_buckets = 0;
      std::optional<rust::Box<NgramSparse>> op;
      std::optional<rust::Box<DocumentSource>> source;
      TF_RETURN_IF_ERROR(BuildSparse(c, &num_buckets, &op));
      TF_RETURN_IF_ERROR(GetDocumentSource(c, &source));
      c->set_output(0, c->Matrix(InferenceContext::kUnknownDim, 2));
      c->set_output(1, c->Vector(InferenceContext::kUnknownDim));
      c->set_output(2, c->Vector(2));
      return absl::OkStatus();
    })
    .Doc(R"doc(
Bag of hashed n-grams as the parts of a tf.SparseTensor of dense shape
[num_elements, num_buckets] (input read flattened), indices sorted row-major.
)doc");

class HashedNgramSparseCountsKernel : public OpKernel {
 public:
  explicit HashedNgramSparseCountsKernel(OpKernelConstruction* ctx)
      : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, BuildSparse(ctx, &num_buckets_, &op_));
    OP_REQUIRES_OK(ctx, GetDocumentSource(ctx, &source_));
  }

  void Compute(OpKernelContext* ctx) override {
    auto docs = ctx->input(0).flat<tstring>();
    const int64_t n = docs.size();
    const NgramSparse& op = **op_;
    std::vector<rust::Vec<uint64_t>> row_indices(n);
    std::vector<rust::Vec<float>> row_values(n);
    OP_REQUIRES_OK(ctx, ForEachRustCall(ctx, **source_, docs, 25,
                                        [&](int64_t i, rust::Slice<const uint8_t> doc) {
                                          op.write_counts(doc, row_indices[i], row_values[i]);
                                        }));

    std::vector<int64_t> starts(n + 1, 0);
    for (int64_t i = 0; i < n; ++i) {
      starts[i + 1] = starts[i] + static_cast<int64_t>(row_indices[i].size());
    }
    Tensor *indices = nullptr, *values = nullptr, *dense_shape = nullptr;
    const int64_t nnz = starts[n];
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({nnz, 2}), &indices));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(1, TensorShape({nnz}), &values));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(2, TensorShape({2}), &dense_shape));
    // Rows are copied in parallel: they can be larger than the input.
    // Through plain pointers: each rust::Vec access is a call into Rust.
    int64_t* idx = indices->matrix<int64_t>().data();
    float* val = values->flat<float>().data();
    ForEachElement(ctx, n, 1000, [&](int64_t i) {
      const int64_t start = starts[i], len = starts[i + 1] - start;
      if (len == 0) return;
      const uint64_t* row = row_indices[i].data();
      for (int64_t j = 0; j < len; ++j) {
        idx[2 * (start + j)] = i;
        // Below num_buckets <= int64 max (NgramHasher::new).
        idx[2 * (start + j) + 1] = static_cast<int64_t>(row[j]);
      }
      std::memcpy(val + start, row_values[i].data(), len * sizeof(float));
    });
    dense_shape->flat<int64_t>()(0) = n;
    dense_shape->flat<int64_t>()(1) = num_buckets_;
  }

 private:
  int64_t num_buckets_ = 0;
  std::optional<rust::Box<NgramSparse>> op_;
  std::optional<rust::Box<DocumentSource>> source_;
};

REGISTER_KERNEL_BUILDER(Name(kSparseName).Device(tensorflow::DEVICE_CPU),
                        HashedNgramSparseCountsKernel);

}  // namespace
}  // namespace rustfx
