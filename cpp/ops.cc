// Op registrations: signatures, docs and shape functions. Shape functions
// validate attrs through the Rust core, so bad parameters fail when the op is
// added to a graph, with the core's message saying what is allowed.
#include "rustfx_common.h"
#include "tensorflow/core/framework/common_shape_fns.h"
#include "tensorflow/core/framework/op.h"
#include "tensorflow/core/framework/shape_inference.h"

// The TF version these kernels were compiled against (build.rs defines
// RUSTFX_TF_VERSION from the TensorFlow that gave the flags). rustfx reads it
// from the .so file before loading it, so a mismatch is reported clearly
// instead of as an undefined symbol or a crash.
extern "C" __attribute__((used, retain)) const char rustfx_built_against[] =
    "rustfx-built-against-tensorflow=" RUSTFX_TF_VERSION;

namespace rustfx {
namespace {

using tensorflow::shape_inference::DimensionHandle;
using tensorflow::shape_inference::InferenceContext;
using tensorflow::shape_inference::ShapeHandle;

// Shared attrs of every hashed n-gram op.
#define RUSTFX_NGRAM_ATTRS                          \
  Attr("num_buckets: int")                          \
      .Attr("ngram_widths: list(int) = [1]")        \
      .Attr("tokenizer: string = 'whitespace'")     \
      .Attr("lowercase: bool = false")              \
      .Attr("hash: string = 'fingerprint64'")

absl::Status CheckNgramAttrs(InferenceContext* c, const std::string& output) {
  NgramParams params;
  TF_RETURN_IF_ERROR(NgramParamsFromAttrs(c, output, &params));
  return InvalidArgumentIfThrows([&] { new_ngram_op(params); });
}

// Output shape input.shape + [width].
absl::Status AppendDim(InferenceContext* c, int64_t width) {
  ShapeHandle out;
  TF_RETURN_IF_ERROR(c->Concatenate(c->input(0), c->Vector(width), &out));
  c->set_output(0, out);
  return absl::OkStatus();
}

// Shape function of a byte feature op: validates attrs, appends its width.
std::function<absl::Status(InferenceContext*)> ByteFeatureShape(
    const std::string& kind) {
  return [kind](InferenceContext* c) -> absl::Status {
    ByteFeatureParams params;
    TF_RETURN_IF_ERROR(ByteFeatureParamsFromAttrs(c, kind, &params));
    int64_t width = 0;
    TF_RETURN_IF_ERROR(InvalidArgumentIfThrows(
        [&] { width = new_byte_feature_op(params)->width(); }));
    return AppendDim(c, width);
  };
}

REGISTER_OP("Rustfx>HashedNgrams")
    .Input("input: string")
    .Output("values: int64")
    .Output("row_splits: int64")
    .RUSTFX_NGRAM_ATTRS
    .SetShapeFn([](InferenceContext* c) -> absl::Status {
      TF_RETURN_IF_ERROR(CheckNgramAttrs(c, "ids"));
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

REGISTER_OP("Rustfx>HashedNgramSequence")
    .Input("input: string")
    .Output("ids: int64")
    .RUSTFX_NGRAM_ATTRS
    .Attr("max_tokens: int")
    .Attr("pad_value: int = -1")
    .SetShapeFn([](InferenceContext* c) -> absl::Status {
      TF_RETURN_IF_ERROR(CheckNgramAttrs(c, "sequence"));
      int64_t max_tokens;
      TF_RETURN_IF_ERROR(c->GetAttr("max_tokens", &max_tokens));
      return AppendDim(c, max_tokens);
    })
    .Doc(R"doc(
The first `max_tokens` hashed n-gram ids of each element, padded with
`pad_value` (which can never be a bucket id), of shape input.shape + [max_tokens].
)doc");

REGISTER_OP("Rustfx>HashedNgramCounts")
    .Input("input: string")
    .Output("counts: float")
    .RUSTFX_NGRAM_ATTRS
    .Attr("binary: bool = false")
    .Attr("alternate_sign: bool = false")
    .Attr("norm: string = 'none'")
    .SetShapeFn([](InferenceContext* c) -> absl::Status {
      TF_RETURN_IF_ERROR(CheckNgramAttrs(c, "dense_counts"));
      int64_t num_buckets;
      TF_RETURN_IF_ERROR(c->GetAttr("num_buckets", &num_buckets));
      return AppendDim(c, num_buckets);
    })
    .Doc(R"doc(
Bag of hashed n-grams of each element as a dense float32 row of num_buckets
counts (optionally binary, signed, l1/l2-normalised like scikit-learn).
The output has shape input.shape + [num_buckets].
)doc");

REGISTER_OP("Rustfx>HashedNgramSparseCounts")
    .Input("input: string")
    .Output("indices: int64")
    .Output("values: float")
    .Output("dense_shape: int64")
    .RUSTFX_NGRAM_ATTRS
    .Attr("binary: bool = false")
    .Attr("alternate_sign: bool = false")
    .Attr("norm: string = 'none'")
    .SetShapeFn([](InferenceContext* c) -> absl::Status {
      TF_RETURN_IF_ERROR(CheckNgramAttrs(c, "sparse_counts"));
      c->set_output(0, c->Matrix(InferenceContext::kUnknownDim, 2));
      c->set_output(1, c->Vector(InferenceContext::kUnknownDim));
      c->set_output(2, c->Vector(2));
      return absl::OkStatus();
    })
    .Doc(R"doc(
Bag of hashed n-grams as the parts of a tf.SparseTensor of dense shape
[num_elements, num_buckets] (input read flattened), indices sorted row-major.
)doc");

REGISTER_OP("Rustfx>ReadFiles")
    .Input("paths: string")
    .Output("contents: string")
    .Output("status_codes: int32")
    .Output("status_messages: string")
    .Attr("max_bytes: int")
    .Attr("on_error: {'raise', 'empty'} = 'raise'")
    .SetShapeFn([](InferenceContext* c) -> absl::Status {
      int64_t max_bytes;
      TF_RETURN_IF_ERROR(c->GetAttr("max_bytes", &max_bytes));
      TF_RETURN_IF_ERROR(
          InvalidArgumentIfThrows([&] { check_max_bytes(max_bytes); }));
      for (int i = 0; i < 3; ++i) c->set_output(i, c->input(0));
      return absl::OkStatus();
    })
    .Doc(R"doc(
Reads the first `max_bytes` bytes of each regular file in `paths` without ever
blocking (FIFOs, devices and directories are errors). on_error='raise' fails
on the first bad path (in element order) with its code and path;
on_error='empty' gives b"" for it and reports it in status_codes (a
tensorflow error code, 0 = OK) and status_messages.
)doc");

// Attr of the EMBER-compatible byte feature ops.
#define RUSTFX_EMPTY_ATTR Attr("empty: {'zeros', 'nan'} = 'zeros'")

REGISTER_OP("Rustfx>ByteHistogram")
    .Input("input: string")
    .Output("features: float")
    .RUSTFX_EMPTY_ATTR
    .SetShapeFn(ByteFeatureShape("histogram"))
    .Doc(R"doc(
EMBER ByteHistogram: the 256 byte-value counts of each element divided by
their sum, float32, shape input.shape + [256]. empty='nan' reproduces EMBER's
NaN row for an empty input; the default gives zeros.
)doc");

REGISTER_OP("Rustfx>ByteEntropyHistogram")
    .Input("input: string")
    .Output("features: float")
    .RUSTFX_EMPTY_ATTR
    .Attr("window: int = 2048")
    .Attr("step: int = 1024")
    .SetShapeFn(ByteFeatureShape("entropy_histogram"))
    .Doc(R"doc(
EMBER ByteEntropyHistogram: a 16x16 joint histogram of (block entropy bin,
high nibble) over sliding windows, normalised, float32, shape
input.shape + [256].
)doc");

REGISTER_OP("Rustfx>StringFeatures")
    .Input("input: string")
    .Output("features: float")
    .SetShapeFn(ByteFeatureShape("strings"))
    .Doc(R"doc(
EMBER StringExtractor features of printable runs (104 values in EMBER's
order), float32, shape input.shape + [104].
)doc");

REGISTER_OP("Rustfx>ByteSequence")
    .Input("input: string")
    .Output("sequence: int32")
    .Attr("max_len: int")
    .Attr("shift: int = 0")
    .Attr("pad_value: int = 256")
    .Attr("sampling: {'head', 'head_tail'} = 'head'")
    .SetShapeFn([](InferenceContext* c) -> absl::Status {
      ByteSequenceParams params;
      TF_RETURN_IF_ERROR(ByteSequenceParamsFromAttrs(c, &params));
      TF_RETURN_IF_ERROR(
          InvalidArgumentIfThrows([&] { new_byte_sequence_op(params); }));
      return AppendDim(c, params.max_len);
    })
    .Doc(R"doc(
MalConv-style raw byte sequence: each kept byte as byte + shift, then
pad_value, int32, shape input.shape + [max_len].
)doc");

}  // namespace
}  // namespace rustfx
