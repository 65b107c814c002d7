// Rustfx>FeatureCacheStats: the figures of this process's feature cache of
// a directory (src/cache_ops.rs), what rustfx.FeatureCache.stats() runs.
// The extractor ops read and fill the cache (extract_ops.cc, kCacheAttrs);
// this op is how Python sees what they did, in the process that did it (a
// tf.data service worker's too). Stateful: it commits the queued rows, and
// its figures change with every batch. It fails only for bad options, with
// the core's message (which names what is allowed); a cache that cannot be
// opened gives the figures of none, its failure counted in "errors" and said
// once on stderr.
#include <cstring>

#include "tf_kernel.h"

namespace rustfx {
namespace {

// The figures, in rustfx_cache::Stats::NAMES' order.
constexpr int64_t kFigures = 9;

class FeatureCacheStatsKernel {
 public:
  static constexpr char kName[] = "Rustfx>FeatureCacheStats";

  OpStatus Init(TF_OpKernelConstruction*, const Attrs& attrs) {
    RUSTFX_RETURN_IF_ERROR(attrs.String("cache_dir", &dir_));
    RUSTFX_RETURN_IF_ERROR(attrs.String("cache_key", &key_));
    RUSTFX_RETURN_IF_ERROR(attrs.Bool("cache_read_only", &read_only_));
    return attrs.Int64("cache_max_bytes", &max_bytes_);
  }

  OpStatus Compute(TF_OpKernelContext* ctx) const {
    rust::Vec<uint64_t> figures;
    try {
      figures = feature_cache_stats(
          rust::Slice<const uint8_t>(reinterpret_cast<const uint8_t*>(dir_.data()), dir_.size()),
          key_, max_bytes_, read_only_);
    } catch (const std::exception& e) {
      // The core's message names the option and what is allowed.
      return InvalidArgument(e.what());
    }
    if (static_cast<int64_t>(figures.size()) != kFigures) {
      return Internal(std::string(kName) + ": another number of figures (a bug in rustfx)");
    }
    TensorPtr output;
    RUSTFX_RETURN_IF_ERROR(AllocateOutput(ctx, 0, TF_INT64, {kFigures}, &output));
    std::memcpy(Data<int64_t>(output), figures.data(), kFigures * sizeof(int64_t));
    return {};
  }

 private:
  std::string dir_, key_;
  int64_t max_bytes_ = -1;
  bool read_only_ = false;
};

void FiguresShape(TF_ShapeInferenceContext* ctx, TF_Status* status) {
  ShapeHandle figures(Vector(ctx, kFigures));
  TF_ShapeInferenceContextSetOutput(ctx, 0, figures.get(), status);
}

void RegisterCacheOps() {
  OpDefinition stats{FeatureCacheStatsKernel::kName,
                     {},
                     {"figures: int64"},
                     {"cache_dir: string", "cache_key: string = 'content'",
                      "cache_max_bytes: int = -1", "cache_read_only: bool = false"},
                     FiguresShape};
  stats.stateful = true;
  RegisterOp(stats);
  RegisterKernel<FeatureCacheStatsKernel>(FeatureCacheStatsKernel::kName,
                                          "RustfxFeatureCacheStats");
}

// tf.load_op_library runs the library's static initializers, not
// TF_InitKernel.
const bool registered = (RegisterCacheOps(), true);

}  // namespace
}  // namespace rustfx
