// Ember2024StringFeatures: EMBER2024's strings group (177 values), a
// fixed-width extractor served by RowKernel.
#include "rustfx_kernel.h"
#include "tensorflow/core/framework/op.h"

namespace rustfx {
namespace {

struct Ember2024StringFeaturesOp {
  static constexpr char kName[] = "Rustfx>Ember2024StringFeatures";
  static constexpr int64_t kCostPerByte = 20;
  using Rows = FloatRows;

  // No attrs.
  template <typename AttrSource>
  static absl::Status Build(AttrSource*, std::optional<rust::Box<Rows>>* rows) {
    return InvalidArgumentIfThrows(
        [&] { rows->emplace(new_ember2024_string_features()); });
  }
};

REGISTER_OP(Ember2024StringFeaturesOp::kName)
    .Input("input: string")
    .RUSTFX_SOURCE_ATTRS
    .Output("features: float")
    .SetShapeFn(RowShape<Ember2024StringFeaturesOp>)
    .Doc(R"doc(
EMBER2024 (thrember, feature version 3) strings group: string statistics,
the printable distribution, its entropy and 77 pattern counts, float32,
shape input.shape + [177].
)doc");
RUSTFX_REGISTER_ROW_KERNEL(Ember2024StringFeaturesOp);

}  // namespace
}  // namespace rustfx
