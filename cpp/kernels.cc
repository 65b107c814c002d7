// OpKernels: adapt tensors to the Rust core and back. Stateless: the only
// member of a kernel is the immutable Rust object built from its attrs at
// construction, so concurrent Compute calls are safe.
#include <algorithm>
#include <cstring>
#include <functional>
#include <limits>
#include <mutex>
#include <stdexcept>

#include "rustfx_common.h"
#include "tensorflow/core/framework/op_kernel.h"
#include "tensorflow/core/framework/tensor.h"
#include "tensorflow/core/util/work_sharder.h"

namespace rustfx {
namespace {

using tensorflow::OpKernel;
using tensorflow::OpKernelConstruction;
using tensorflow::OpKernelContext;
using tensorflow::Tensor;
using tensorflow::TensorShape;
using tensorflow::tstring;

// Keeps the error of the lowest failing element, so the reported error does
// not depend on how TF split the work between threads.
class FirstError {
 public:
  void Record(int64_t element, absl::Status status) {
    std::lock_guard<std::mutex> lock(mu_);
    if (element < element_) {
      element_ = element;
      status_ = std::move(status);
    }
  }
  absl::Status status() const { return status_; }

 private:
  std::mutex mu_;
  int64_t element_ = std::numeric_limits<int64_t>::max();
  absl::Status status_;
};

// Runs `work(i)` for every element on TF's intra-op pool through Shard,
// which respects tf.data's per-thread parallelism limits (a private pool
// would oversubscribe under num_parallel_calls). `cost_per_byte` is a rough
// cycle count; Shard only uses it to decide how finely to split.
void ForEachElement(OpKernelContext* ctx,
                    const tensorflow::TTypes<tstring>::ConstFlat& docs,
                    int64_t cost_per_byte,
                    const std::function<void(int64_t)>& work) {
  const int64_t n = docs.size();
  if (n == 0) return;
  int64_t bytes = 0;
  for (int64_t i = 0; i < n; ++i) bytes += docs(i).size();
  const int64_t cost = std::max<int64_t>(1000, cost_per_byte * (bytes / n));
  auto* pool = ctx->device()->tensorflow_cpu_worker_threads();
  tensorflow::Shard(pool->num_threads, pool->workers, n, cost,
                    [&work](int64_t begin, int64_t end) {
                      for (int64_t i = begin; i < end; ++i) work(i);
                    });
}

// ForEachElement for work that calls into Rust: an exception from element i
// (rust::Error from a caught panic, or a broken invariant) becomes Internal
// naming the op; the error of the lowest failing element is returned.
absl::Status ForEachRustCall(OpKernelContext* ctx,
                             const tensorflow::TTypes<tstring>::ConstFlat& docs,
                             int64_t cost_per_byte, const std::string& op_name,
                             const std::function<void(int64_t)>& work) {
  FirstError error;
  ForEachElement(ctx, docs, cost_per_byte, [&](int64_t i) {
    try {
      work(i);
    } catch (const std::exception& e) {
      error.Record(i, InternalFromRust(op_name.c_str(), e));
    }
  });
  return error.status();
}

// Runs a Rust row writer over every element into output 0, of shape
// input.shape + [width]; `write(doc, row)` throws rust::Error on a bug.
template <typename T, typename Write>
void ComputeRows(OpKernelContext* ctx, const std::string& op_name,
                 int64_t width, int64_t cost_per_byte, Write write) {
  const Tensor& input = ctx->input(0);
  TensorShape shape = input.shape();
  OP_REQUIRES_OK(ctx, shape.AddDimWithStatus(width));
  Tensor* output = nullptr;
  OP_REQUIRES_OK(ctx, ctx->allocate_output(0, shape, &output));
  auto docs = input.flat<tstring>();
  T* rows = output->flat<T>().data();
  OP_REQUIRES_OK(ctx, ForEachRustCall(ctx, docs, cost_per_byte, op_name,
                                      [&](int64_t i) {
                                        write(AsBytes(docs(i)),
                                              rust::Slice<T>(rows + i * width,
                                                             width));
                                      }));
}

// Base of the n-gram kernels: builds the Rust hasher once from the attrs.
class NgramKernel : public OpKernel {
 public:
  NgramKernel(OpKernelConstruction* ctx, const char* output)
      : OpKernel(ctx), name_(ctx->def().op()) {
    NgramParams params;
    OP_REQUIRES_OK(ctx, NgramParamsFromAttrs(ctx, output, &params));
    OP_REQUIRES_OK(ctx, InvalidArgumentIfThrows(
                            [&] { op_.emplace(new_ngram_op(params)); }));
    max_tokens_ = params.max_tokens;
    pad_value_ = params.pad_value;
    num_buckets_ = params.num_buckets;
  }

 protected:
  const NgramOp& op() const { return **op_; }
  const std::string name_;
  std::optional<rust::Box<NgramOp>> op_;
  int64_t max_tokens_ = 0, pad_value_ = -1, num_buckets_ = 0;
};

class HashedNgramsKernel : public NgramKernel {
 public:
  explicit HashedNgramsKernel(OpKernelConstruction* ctx)
      : NgramKernel(ctx, "ids") {}

  void Compute(OpKernelContext* ctx) override {
    auto docs = ctx->input(0).flat<tstring>();
    const int64_t n = docs.size();
    std::vector<rust::Vec<int64_t>> rows(n);
    OP_REQUIRES_OK(ctx, ForEachRustCall(ctx, docs, 20, name_, [&](int64_t i) {
                         op().append_ids(AsBytes(docs(i)), rows[i]);
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
    int64_t* out = values->flat<int64_t>().data();
    for (const auto& row : rows) {
      if (!row.empty()) std::memcpy(out, row.data(), row.size() * sizeof(int64_t));
      out += row.size();
    }
  }
};

class HashedNgramSequenceKernel : public NgramKernel {
 public:
  explicit HashedNgramSequenceKernel(OpKernelConstruction* ctx)
      : NgramKernel(ctx, "sequence") {}

  void Compute(OpKernelContext* ctx) override {
    ComputeRows<int64_t>(ctx, name_, max_tokens_, 20,
                         [this](rust::Slice<const uint8_t> doc,
                                rust::Slice<int64_t> row) {
                           op().write_sequence(doc, pad_value_, row);
                         });
  }
};

class HashedNgramCountsKernel : public NgramKernel {
 public:
  explicit HashedNgramCountsKernel(OpKernelConstruction* ctx)
      : NgramKernel(ctx, "dense_counts") {}

  void Compute(OpKernelContext* ctx) override {
    ComputeRows<float>(ctx, name_, num_buckets_, 25,
                       [this](rust::Slice<const uint8_t> doc,
                              rust::Slice<float> row) {
                         rust::Vec<int64_t> indices;
                         rust::Vec<float> values;
                         op().append_counts(doc, indices, values);
                         std::fill(row.begin(), row.end(), 0.0f);
                         // Rust guarantees index < num_buckets; checked
                         // anyway, as a wrong index here would write out of
                         // bounds.
                         for (size_t k = 0; k < indices.size(); ++k) {
                           if (indices[k] < 0 || indices[k] >= row.size()) {
                             throw std::out_of_range("bucket index out of range");
                           }
                           row[indices[k]] = values[k];
                         }
                       });
  }
};

class HashedNgramSparseCountsKernel : public NgramKernel {
 public:
  explicit HashedNgramSparseCountsKernel(OpKernelConstruction* ctx)
      : NgramKernel(ctx, "sparse_counts") {}

  void Compute(OpKernelContext* ctx) override {
    auto docs = ctx->input(0).flat<tstring>();
    const int64_t n = docs.size();
    std::vector<rust::Vec<int64_t>> row_indices(n);
    std::vector<rust::Vec<float>> row_values(n);
    OP_REQUIRES_OK(ctx, ForEachRustCall(ctx, docs, 25, name_, [&](int64_t i) {
                         op().append_counts(AsBytes(docs(i)), row_indices[i],
                                            row_values[i]);
                       }));

    int64_t nnz = 0;
    for (const auto& row : row_indices) nnz += row.size();
    Tensor *indices = nullptr, *values = nullptr, *dense_shape = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({nnz, 2}), &indices));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(1, TensorShape({nnz}), &values));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(2, TensorShape({2}), &dense_shape));
    auto idx = indices->matrix<int64_t>();
    auto val = values->flat<float>();
    int64_t k = 0;
    for (int64_t i = 0; i < n; ++i) {
      for (size_t j = 0; j < row_indices[i].size(); ++j, ++k) {
        idx(k, 0) = i;
        idx(k, 1) = row_indices[i][j];
        val(k) = row_values[i][j];
      }
    }
    dense_shape->flat<int64_t>()(0) = n;
    dense_shape->flat<int64_t>()(1) = num_buckets_;
  }
};

class ReadFilesKernel : public OpKernel {
 public:
  explicit ReadFilesKernel(OpKernelConstruction* ctx) : OpKernel(ctx) {
    std::string on_error;
    OP_REQUIRES_OK(ctx, ctx->GetAttr("max_bytes", &max_bytes_));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("on_error", &on_error));
    raise_ = on_error == "raise";
    OP_REQUIRES_OK(ctx, InvalidArgumentIfThrows(
                            [&] { check_max_bytes(max_bytes_); }));
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& paths = ctx->input(0);
    Tensor *contents = nullptr, *codes = nullptr, *messages = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, paths.shape(), &contents));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(1, paths.shape(), &codes));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(2, paths.shape(), &messages));
    auto path_flat = paths.flat<tstring>();
    auto content_flat = contents->flat<tstring>();
    auto code_flat = codes->flat<int32_t>();
    auto message_flat = messages->flat<tstring>();
    FirstError error;
    // Reading is I/O bound: a high cost per element lets Shard overlap reads.
    ForEachElement(ctx, path_flat, 100000, [&](int64_t i) {
      rust::Vec<uint8_t> bytes;
      Status status = read_file(AsBytes(path_flat(i)), max_bytes_, bytes);
      code_flat(i) = static_cast<int32_t>(status.code);
      if (status.code == StatusCode::Ok) {
        content_flat(i).assign(reinterpret_cast<const char*>(bytes.data()),
                               bytes.size());
        return;
      }
      message_flat(i).assign(status.message.data(), status.message.size());
      if (raise_) {
        error.Record(i, absl::Status(static_cast<absl::StatusCode>(status.code),
                                     std::string(status.message)));
      }
    });
    OP_REQUIRES_OK(ctx, error.status());
  }

 private:
  int64_t max_bytes_ = 0;
  bool raise_ = true;
};

// The EMBER byte feature ops: one kernel, three kinds.
class ByteFeatureKernel : public OpKernel {
 public:
  ByteFeatureKernel(OpKernelConstruction* ctx, const char* kind)
      : OpKernel(ctx), name_(ctx->def().op()) {
    ByteFeatureParams params;
    OP_REQUIRES_OK(ctx, ByteFeatureParamsFromAttrs(ctx, kind, &params));
    OP_REQUIRES_OK(ctx, InvalidArgumentIfThrows(
                            [&] { op_.emplace(new_byte_feature_op(params)); }));
  }

  void Compute(OpKernelContext* ctx) override {
    const ByteFeatureOp& op = **op_;
    ComputeRows<float>(ctx, name_, op.width(), 10,
                       [&op](rust::Slice<const uint8_t> doc,
                             rust::Slice<float> row) { op.write_row(doc, row); });
  }

 private:
  const std::string name_;
  std::optional<rust::Box<ByteFeatureOp>> op_;
};

template <const char* kKind>
class ByteFeatureKernelOf : public ByteFeatureKernel {
 public:
  explicit ByteFeatureKernelOf(OpKernelConstruction* ctx)
      : ByteFeatureKernel(ctx, kKind) {}
};
constexpr char kHistogram[] = "histogram";
constexpr char kEntropyHistogram[] = "entropy_histogram";
constexpr char kStrings[] = "strings";

class ByteSequenceKernel : public OpKernel {
 public:
  explicit ByteSequenceKernel(OpKernelConstruction* ctx)
      : OpKernel(ctx), name_(ctx->def().op()) {
    ByteSequenceParams params;
    OP_REQUIRES_OK(ctx, ByteSequenceParamsFromAttrs(ctx, &params));
    OP_REQUIRES_OK(ctx, InvalidArgumentIfThrows(
                            [&] { op_.emplace(new_byte_sequence_op(params)); }));
  }

  void Compute(OpKernelContext* ctx) override {
    const ByteSequenceOp& op = **op_;
    ComputeRows<int32_t>(
        ctx, name_, op.max_len(), 2,
        [&op](rust::Slice<const uint8_t> doc, rust::Slice<int32_t> row) {
          op.write_row(doc, row);
        });
  }

 private:
  const std::string name_;
  std::optional<rust::Box<ByteSequenceOp>> op_;
};

REGISTER_KERNEL_BUILDER(
    Name("Rustfx>ByteHistogram").Device(tensorflow::DEVICE_CPU),
    ByteFeatureKernelOf<kHistogram>);
REGISTER_KERNEL_BUILDER(
    Name("Rustfx>ByteEntropyHistogram").Device(tensorflow::DEVICE_CPU),
    ByteFeatureKernelOf<kEntropyHistogram>);
REGISTER_KERNEL_BUILDER(
    Name("Rustfx>StringFeatures").Device(tensorflow::DEVICE_CPU),
    ByteFeatureKernelOf<kStrings>);
REGISTER_KERNEL_BUILDER(
    Name("Rustfx>ByteSequence").Device(tensorflow::DEVICE_CPU),
    ByteSequenceKernel);
REGISTER_KERNEL_BUILDER(Name("Rustfx>HashedNgrams").Device(tensorflow::DEVICE_CPU),
                        HashedNgramsKernel);
REGISTER_KERNEL_BUILDER(
    Name("Rustfx>HashedNgramSequence").Device(tensorflow::DEVICE_CPU),
    HashedNgramSequenceKernel);
REGISTER_KERNEL_BUILDER(
    Name("Rustfx>HashedNgramCounts").Device(tensorflow::DEVICE_CPU),
    HashedNgramCountsKernel);
REGISTER_KERNEL_BUILDER(
    Name("Rustfx>HashedNgramSparseCounts").Device(tensorflow::DEVICE_CPU),
    HashedNgramSparseCountsKernel);
REGISTER_KERNEL_BUILDER(Name("Rustfx>ReadFiles").Device(tensorflow::DEVICE_CPU),
                        ReadFilesKernel);

}  // namespace
}  // namespace rustfx
