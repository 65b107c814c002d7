// GeneralFileInfo: EMBER2024's general file information without is_pe, a
// fixed-width extractor served by RowKernel.
#include "rustfx_kernel.h"
#include "tensorflow/core/framework/op.h"

namespace rustfx {
namespace {

struct GeneralFileInfoOp {
  static constexpr char kName[] = "Rustfx>GeneralFileInfo";
  static constexpr int64_t kCostPerByte = 4;
  using Rows = FloatRows;

  // No attrs.
  template <typename AttrSource>
  static absl::Status Build(AttrSource*, std::optional<rust::Box<Rows>>* rows) {
    return InvalidArgumentIfThrows(
        [&] { rows->emplace(new_general_file_info()); });
  }
};

REGISTER_OP(GeneralFileInfoOp::kName)
    .Input("input: string")
    .RUSTFX_SOURCE_ATTRS
    .Output("features: float")
    .SetShapeFn(RowShape<GeneralFileInfoOp>)
    .Doc(R"doc(
EMBER2024 (thrember) general file information without is_pe: size, entropy
(pefile's entropy_H) and the first four bytes, float32, shape
input.shape + [6].
)doc");
RUSTFX_REGISTER_ROW_KERNEL(GeneralFileInfoOp);

}  // namespace
}  // namespace rustfx
