// Helpers shared by the op registrations and the kernels: reading n-gram
// attributes into the bridge's NgramParams, and turning bridge errors into
// absl::Status. Kept here so ops.cc and kernels.cc read attrs one way.
#ifndef RUSTFX_CPP_RUSTFX_COMMON_H_
#define RUSTFX_CPP_RUSTFX_COMMON_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "rustfx/src/bridge.rs.h"
#include "rust/cxx.h"
#include "tensorflow/core/framework/op_kernel.h"

namespace rustfx {

// Reads the n-gram attrs that exist on the op; `output` selects which
// output-specific attrs are expected. Works for OpKernelConstruction and
// shape_inference::InferenceContext, which share GetAttr.
template <typename AttrSource>
absl::Status NgramParamsFromAttrs(AttrSource* attrs, const std::string& output,
                                  NgramParams* params) {
  std::string tokenizer, hash, norm = "none";
  std::vector<int64_t> widths;
  int64_t num_buckets = 0, max_tokens = 0, pad_value = -1;
  bool lowercase = false, binary = false, alternate_sign = false;
  TF_RETURN_IF_ERROR(attrs->GetAttr("num_buckets", &num_buckets));
  TF_RETURN_IF_ERROR(attrs->GetAttr("ngram_widths", &widths));
  TF_RETURN_IF_ERROR(attrs->GetAttr("tokenizer", &tokenizer));
  TF_RETURN_IF_ERROR(attrs->GetAttr("lowercase", &lowercase));
  TF_RETURN_IF_ERROR(attrs->GetAttr("hash", &hash));
  if (output == "sequence") {
    TF_RETURN_IF_ERROR(attrs->GetAttr("max_tokens", &max_tokens));
    TF_RETURN_IF_ERROR(attrs->GetAttr("pad_value", &pad_value));
  }
  if (output == "dense_counts" || output == "sparse_counts") {
    TF_RETURN_IF_ERROR(attrs->GetAttr("binary", &binary));
    TF_RETURN_IF_ERROR(attrs->GetAttr("alternate_sign", &alternate_sign));
    TF_RETURN_IF_ERROR(attrs->GetAttr("norm", &norm));
  }
  params->tokenizer = tokenizer;
  params->widths.clear();
  for (int64_t w : widths) params->widths.push_back(w);
  params->lowercase = lowercase;
  params->hash = hash;
  params->num_buckets = num_buckets;
  params->output = output;
  params->max_tokens = max_tokens;
  params->pad_value = pad_value;
  params->binary = binary;
  params->alternate_sign = alternate_sign;
  params->norm = norm;
  return absl::OkStatus();
}

// Runs `construct` (which calls a Rust constructor that validates attrs);
// a rust::Error becomes InvalidArgument with the core's message, which says
// what is allowed. Used by shape functions too, so bad attrs fail at graph
// construction, and by kernel constructors.
template <typename Construct>
absl::Status InvalidArgumentIfThrows(Construct&& construct) {
  try {
    construct();
    return absl::OkStatus();
  } catch (const rust::Error& e) {
    return absl::InvalidArgumentError(e.what());
  }
}

// Reads the attrs of a fixed-width byte feature op ("histogram",
// "entropy_histogram" or "strings").
template <typename AttrSource>
absl::Status ByteFeatureParamsFromAttrs(AttrSource* attrs,
                                        const std::string& kind,
                                        ByteFeatureParams* params) {
  // EMBER's string features are zeros, never NaN, without strings: that op
  // has no `empty` attr.
  std::string empty = "zeros";
  int64_t window = 0, step = 0;
  if (kind != "strings") TF_RETURN_IF_ERROR(attrs->GetAttr("empty", &empty));
  if (kind == "entropy_histogram") {
    TF_RETURN_IF_ERROR(attrs->GetAttr("window", &window));
    TF_RETURN_IF_ERROR(attrs->GetAttr("step", &step));
  }
  params->kind = kind;
  params->window = window;
  params->step = step;
  params->empty = empty;
  return absl::OkStatus();
}

template <typename AttrSource>
absl::Status ByteSequenceParamsFromAttrs(AttrSource* attrs,
                                         ByteSequenceParams* params) {
  std::string sampling;
  TF_RETURN_IF_ERROR(attrs->GetAttr("max_len", &params->max_len));
  TF_RETURN_IF_ERROR(attrs->GetAttr("shift", &params->shift));
  TF_RETURN_IF_ERROR(attrs->GetAttr("pad_value", &params->pad_value));
  TF_RETURN_IF_ERROR(attrs->GetAttr("sampling", &sampling));
  params->sampling = sampling;
  return absl::OkStatus();
}

// A Rust call that failed at run time: Rust extractors only fail on a bug
// (a caught panic, or a broken invariant), so this is Internal and names
// the op.
inline absl::Status InternalFromRust(const char* op, const std::exception& e) {
  return absl::InternalError(std::string(op) + ": " + e.what());
}

inline rust::Slice<const uint8_t> AsBytes(const tensorflow::tstring& s) {
  return rust::Slice<const uint8_t>(reinterpret_cast<const uint8_t*>(s.data()),
                                    s.size());
}

}  // namespace rustfx

#endif  // RUSTFX_CPP_RUSTFX_COMMON_H_
