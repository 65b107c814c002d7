// EmberFeatures: EMBER2024 (thrember, feature version 3) vectors, all twelve
// groups or the ones named, a fixed-width extractor served by RowKernel;
// EmberFeatureNames: the name of each of its values.
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "rustfx_kernel.h"
#include "tensorflow/core/framework/op.h"

namespace rustfx {
namespace {

constexpr char kVersionAttr[] = "feature_version: int = 3";
constexpr char kGroupsAttr[] = "groups: list(string) = []";

// The attrs as the core's constructor takes them: the version and the
// group names joined with ',' ("" for all).
template <typename AttrSource>
absl::Status GetEmberAttrs(AttrSource* attrs, int64_t* version,
                           std::string* groups) {
  std::vector<std::string> names;
  TF_RETURN_IF_ERROR(attrs->GetAttr("feature_version", version));
  TF_RETURN_IF_ERROR(attrs->GetAttr("groups", &names));
  *groups = absl::StrJoin(names, ",");
  return absl::OkStatus();
}

struct EmberFeaturesOp {
  static constexpr char kName[] = "Rustfx>EmberFeatures";
  // Regexes over the strings plus a PE parse; measured ~4-5 ns per byte.
  static constexpr int64_t kCostPerByte = 20;
  using Rows = FloatRows;

  template <typename AttrSource>
  static absl::Status Build(AttrSource* attrs,
                            std::optional<rust::Box<Rows>>* rows) {
    int64_t version = 0;
    std::string groups;
    TF_RETURN_IF_ERROR(GetEmberAttrs(attrs, &version, &groups));
    return InvalidArgumentIfThrows(
        [&] { rows->emplace(new_ember_features(version, groups)); });
  }
};

REGISTER_OP(EmberFeaturesOp::kName)
    .Input("input: string")
    .RUSTFX_SOURCE_ATTRS
    .Output("features: float")
    .Attr(kVersionAttr)
    .Attr(kGroupsAttr)
    .SetShapeFn(RowShape<EmberFeaturesOp>)
    .Doc(R"doc(
EMBER2024 (thrember, feature version 3) feature vectors: the groups named in
`groups` (all twelve, 2568 values, in thrember's order when empty),
float32, shape input.shape + [width]. Files that are not PE get zeros in
the PE groups, as in thrember.
)doc");
RUSTFX_REGISTER_ROW_KERNEL(EmberFeaturesOp);

class EmberFeatureNamesKernel : public tensorflow::OpKernel {
 public:
  explicit EmberFeatureNamesKernel(tensorflow::OpKernelConstruction* ctx)
      : OpKernel(ctx) {
    int64_t version = 0;
    std::string groups;
    OP_REQUIRES_OK(ctx, GetEmberAttrs(ctx, &version, &groups));
    OP_REQUIRES_OK(ctx, InvalidArgumentIfThrows([&] {
                     for (const rust::String& name :
                          ember_feature_names(version, groups)) {
                       names_.emplace_back(name);
                     }
                   }));
  }

  void Compute(tensorflow::OpKernelContext* ctx) override {
    tensorflow::Tensor* out = nullptr;
    OP_REQUIRES_OK(
        ctx, ctx->allocate_output(
                 0, tensorflow::TensorShape({static_cast<int64_t>(names_.size())}),
                 &out));
    auto flat = out->flat<tensorflow::tstring>();
    for (size_t k = 0; k < names_.size(); ++k) flat(k) = names_[k];
  }

 private:
  std::vector<std::string> names_;
};

REGISTER_OP("Rustfx>EmberFeatureNames")
    .Output("names: string")
    .Attr(kVersionAttr)
    .Attr(kGroupsAttr)
    .SetShapeFn([](tensorflow::shape_inference::InferenceContext* c) {
      int64_t version = 0;
      std::string groups;
      TF_RETURN_IF_ERROR(GetEmberAttrs(c, &version, &groups));
      int64_t width = 0;
      TF_RETURN_IF_ERROR(InvalidArgumentIfThrows([&] {
        width = static_cast<int64_t>(new_ember_features(version, groups)->width());
      }));
      c->set_output(0, c->Vector(width));
      return absl::OkStatus();
    })
    .Doc(R"doc(
The names of EmberFeatures' values for the same attrs, string, shape [width]:
"<group>_<value>", e.g. "header_machine" or "imports_libraries_hashed_17".
)doc");
REGISTER_KERNEL_BUILDER(
    Name("Rustfx>EmberFeatureNames").Device(tensorflow::DEVICE_CPU),
    EmberFeatureNamesKernel);

}  // namespace
}  // namespace rustfx
