// EMBER byte feature ops: ByteHistogram, ByteEntropyHistogram,
// StringFeatures. Each is a fixed-width extractor served by RowKernel.
#include "rustfx_kernel.h"
#include "tensorflow/core/framework/op.h"

namespace rustfx {
namespace {

// EMBER returns NaN for an empty input (0/0); rustfx defaults to zeros.
constexpr char kEmptyAttr[] = "empty: string = 'zeros'";

struct ByteHistogramOp {
  static constexpr char kName[] = "Rustfx>ByteHistogram";
  static constexpr int64_t kCostPerByte = 10;
  using Rows = FloatRows;

  template <typename AttrSource>
  static absl::Status Build(AttrSource* attrs,
                            std::optional<rust::Box<Rows>>* rows) {
    EmptyInput empty;
    TF_RETURN_IF_ERROR(GetEnumAttr(attrs, "empty", parse_empty_input, &empty));
    return InvalidArgumentIfThrows(
        [&] { rows->emplace(new_byte_histogram(empty)); });
  }
};

REGISTER_OP(ByteHistogramOp::kName)
    .Input("input: string")
    .RUSTFX_SOURCE_ATTRS
    .Output("features: float")
    .Attr(kEmptyAttr)
    .SetShapeFn(RowShape<ByteHistogramOp>)
    .Doc(R"doc(
EMBER ByteHistogram: the 256 byte-value counts of each element divided by
their sum, float32, shape input.shape + [256]. empty='nan' reproduces EMBER's
NaN row for an empty input; the default 'zeros' gives zeros.
)doc");
RUSTFX_REGISTER_ROW_KERNEL(ByteHistogramOp);

struct ByteEntropyHistogramOp {
  static constexpr char kName[] = "Rustfx>ByteEntropyHistogram";
  static constexpr int64_t kCostPerByte = 10;
  using Rows = FloatRows;

  template <typename AttrSource>
  static absl::Status Build(AttrSource* attrs,
                            std::optional<rust::Box<Rows>>* rows) {
    EmptyInput empty;
    int64_t window = 0, step = 0;
    TF_RETURN_IF_ERROR(GetEnumAttr(attrs, "empty", parse_empty_input, &empty));
    TF_RETURN_IF_ERROR(attrs->GetAttr("window", &window));
    TF_RETURN_IF_ERROR(attrs->GetAttr("step", &step));
    return InvalidArgumentIfThrows([&] {
      rows->emplace(new_byte_entropy_histogram(window, step, empty));
    });
  }
};

REGISTER_OP(ByteEntropyHistogramOp::kName)
    .Input("input: string")
    .RUSTFX_SOURCE_ATTRS
    .Output("features: float")
    .Attr(kEmptyAttr)
    .Attr("window: int = 2048")
    .Attr("step: int = 1024")
    .SetShapeFn(RowShape<ByteEntropyHistogramOp>)
    .Doc(R"doc(
EMBER ByteEntropyHistogram: a 16x16 joint histogram of (block entropy bin,
high nibble) over sliding windows, normalised, float32, shape
input.shape + [256].
)doc");
RUSTFX_REGISTER_ROW_KERNEL(ByteEntropyHistogramOp);

struct StringFeaturesOp {
  static constexpr char kName[] = "Rustfx>StringFeatures";
  static constexpr int64_t kCostPerByte = 10;
  using Rows = FloatRows;

  // No attrs: EMBER's string features are zeros, never NaN, without strings.
  template <typename AttrSource>
  static absl::Status Build(AttrSource*, std::optional<rust::Box<Rows>>* rows) {
    return InvalidArgumentIfThrows(
        [&] { rows->emplace(new_string_features()); });
  }
};

REGISTER_OP(StringFeaturesOp::kName)
    .Input("input: string")
    .RUSTFX_SOURCE_ATTRS
    .Output("features: float")
    .SetShapeFn(RowShape<StringFeaturesOp>)
    .Doc(R"doc(
EMBER StringExtractor features of printable runs (104 values in EMBER's
order), float32, shape input.shape + [104].
)doc");
RUSTFX_REGISTER_ROW_KERNEL(StringFeaturesOp);

}  // namespace
}  // namespace rustfx
