// ReadFiles: bounded, non-blocking reads in Rust, errors that name the path.
#include "rustfx_kernel.h"
#include "tensorflow/core/framework/op.h"

namespace rustfx {
namespace {

using tensorflow::OpKernel;
using tensorflow::OpKernelConstruction;
using tensorflow::OpKernelContext;
using tensorflow::Tensor;
using tensorflow::tstring;
using tensorflow::shape_inference::InferenceContext;

constexpr char kName[] = "Rustfx>ReadFiles";

template <typename AttrSource>
absl::Status GetReadAttrs(AttrSource* attrs, int64_t* max_bytes,
                          OnError* on_error) {
  TF_RETURN_IF_ERROR(attrs->GetAttr("max_bytes", max_bytes));
  TF_RETURN_IF_ERROR(GetEnumAttr(attrs, "on_error", parse_on_error, on_error));
  return InvalidArgumentIfThrows([&] { check_max_bytes(*max_bytes); });
}

REGISTER_OP(kName)
    .Input("paths: string")
    .Output("contents: string")
    .Output("status_codes: int32")
    .Output("status_messages: string")
    .Attr("max_bytes: int")
    .Attr("on_error: string = 'raise'")
    .SetShapeFn([](InferenceContext* c) -> absl::Status {
      int64_t max_bytes = 0;
      OnError on_error;
      TF_RETURN_IF_ERROR(GetReadAttrs(c, &max_bytes, &on_error));
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

class ReadFilesKernel : public OpKernel {
 public:
  explicit ReadFilesKernel(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, GetReadAttrs(ctx, &max_bytes_, &on_error_));
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
    ForEachElement(ctx, path_flat.size(), 100000, [&](int64_t i) {
      Status status = ReadInto(AsBytes(path_flat(i)), &content_flat(i));
      code_flat(i) = static_cast<int32_t>(status.code);
      if (status.code == StatusCode::Ok) return;
      content_flat(i).clear();
      message_flat(i).assign(status.message.data(), status.message.size());
      if (on_error_ == OnError::Raise) {
        error.Record(i, absl::Status(static_cast<absl::StatusCode>(status.code),
                                     std::string(status.message)));
      }
    });
    OP_REQUIRES_OK(ctx, error.status());
  }

 private:
  // Reads the file straight into `out`, sized by the size fstat reports
  // (capped by max_bytes), then appends whatever that size missed (a /proc
  // file says 0; a file may grow while read): no copy of the contents.
  Status ReadInto(rust::Slice<const uint8_t> path, tstring* out) const {
    rust::Box<FileReader> file = open_file(path);
    Status status = file->status();
    if (status.code != StatusCode::Ok) return status;
    const uint64_t max = static_cast<uint64_t>(max_bytes_);
    const uint64_t want = std::min<uint64_t>(file->size_hint(), max);
    out->resize_uninitialized(want);
    ReadChunk head = file->read_into(
        rust::Slice<uint8_t>(reinterpret_cast<uint8_t*>(out->mdata()), want));
    if (head.status.code != StatusCode::Ok) return std::move(head.status);
    out->resize_uninitialized(head.len);
    if (head.len == want && want < max) {
      rust::Vec<uint8_t> rest;
      status = file->read_rest(max - want, rest);
      if (status.code != StatusCode::Ok) return status;
      out->append(reinterpret_cast<const char*>(rest.data()), rest.size());
    }
    return status;
  }

  int64_t max_bytes_ = 0;
  OnError on_error_ = OnError::Raise;
};

REGISTER_KERNEL_BUILDER(Name(kName).Device(tensorflow::DEVICE_CPU),
                        ReadFilesKernel);

// Sha256: the SHA-256 of each string, as 64 lowercase hex digits. Corpus
// extraction (python/rustfx/corpus.py) hashes the contents that read_files
// read for the features, so the key and the features describe the same bytes.
constexpr char kSha256Name[] = "Rustfx>Sha256";

REGISTER_OP(kSha256Name)
    .Input("input: string")
    .Output("digests: string")
    .SetShapeFn([](InferenceContext* c) -> absl::Status {
      c->set_output(0, c->input(0));
      return absl::OkStatus();
    })
    .Doc(R"doc(
The SHA-256 of each element of `input`, as 64 lowercase hex digits (what
hashlib.sha256(x).hexdigest() and sha256sum print).
)doc");

class Sha256Kernel : public OpKernel {
 public:
  explicit Sha256Kernel(OpKernelConstruction* ctx) : OpKernel(ctx) {}

  void Compute(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    Tensor* digests = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, input.shape(), &digests));
    auto input_flat = input.flat<tstring>();
    auto digest_flat = digests->flat<tstring>();
    FirstError error;
    // About 15 cycles per byte; Shard only uses the figure to split.
    ForEachElement(ctx, input_flat.size(), 1000000, [&](int64_t i) {
      try {
        rust::String hex = sha256_hex(AsBytes(input_flat(i)));
        digest_flat(i).assign(hex.data(), hex.size());
      } catch (const rust::Error& e) {
        error.Record(i, absl::InternalError(e.what()));
      }
    });
    OP_REQUIRES_OK(ctx, error.status());
  }
};

REGISTER_KERNEL_BUILDER(Name(kSha256Name).Device(tensorflow::DEVICE_CPU),
                        Sha256Kernel);

}  // namespace
}  // namespace rustfx
