// ByteSequence: MalConv-style raw byte sequences, a fixed-width extractor
// served by RowKernel.
#include "rustfx_kernel.h"
#include "tensorflow/core/framework/op.h"

namespace rustfx {
namespace {

struct ByteSequenceOp {
  static constexpr char kName[] = "Rustfx>ByteSequence";
  static constexpr int64_t kCostPerByte = 2;
  using Rows = Int32Rows;

  template <typename AttrSource>
  static absl::Status Build(AttrSource* attrs,
                            std::optional<rust::Box<Rows>>* rows) {
    int64_t max_len = 0, shift = 0, pad_value = 0;
    Sampling sampling;
    TF_RETURN_IF_ERROR(attrs->GetAttr("max_len", &max_len));
    TF_RETURN_IF_ERROR(attrs->GetAttr("shift", &shift));
    TF_RETURN_IF_ERROR(attrs->GetAttr("pad_value", &pad_value));
    TF_RETURN_IF_ERROR(GetEnumAttr(attrs, "sampling", parse_sampling, &sampling));
    return InvalidArgumentIfThrows([&] {
      rows->emplace(new_byte_sequence(max_len, shift, pad_value, sampling));
    });
  }
};

REGISTER_OP(ByteSequenceOp::kName)
    .Input("input: string")
    .RUSTFX_SOURCE_ATTRS
    .Output("sequence: int32")
    .Attr("max_len: int")
    .Attr("shift: int = 0")
    .Attr("pad_value: int = 256")
    .Attr("sampling: string = 'head'")
    .SetShapeFn(RowShape<ByteSequenceOp>)
    .Doc(R"doc(
MalConv-style raw byte sequence: each kept byte as byte + shift, then
pad_value, int32, shape input.shape + [max_len]. sampling 'head' keeps the
first max_len bytes, 'head_tail' the first ceil(max_len/2) and the last
floor(max_len/2) of longer inputs.
)doc");
RUSTFX_REGISTER_ROW_KERNEL(ByteSequenceOp);

}  // namespace
}  // namespace rustfx
