// ReadFiles: bounded, non-blocking reads in Rust, errors that name the path.
// Sha256: the SHA-256 of each string.
#include "tf_kernel.h"

namespace rustfx {
namespace {

// Reads the first `max_bytes` bytes of each regular file in `paths` without
// ever blocking (FIFOs, devices and directories are errors).
// on_error='raise' fails on the first bad path (in element order) with its
// code and path; on_error='empty' gives b"" for it and reports it in
// status_codes (a tensorflow error code, 0 = OK) and status_messages.
class ReadFilesKernel {
 public:
  static constexpr char kName[] = "Rustfx>ReadFiles";

  OpStatus Init(TF_OpKernelConstruction*, const Attrs& attrs) {
    RUSTFX_RETURN_IF_ERROR(attrs.Int64("max_bytes", &max_bytes_));
    RUSTFX_RETURN_IF_ERROR(attrs.Enum("on_error", parse_on_error, &on_error_));
    return InvalidArgumentIfThrows([&] { check_max_bytes(max_bytes_); });
  }

  OpStatus Compute(TF_OpKernelContext* ctx) const {
    StringInput paths;
    RUSTFX_RETURN_IF_ERROR(GetStringInput(ctx, 0, &paths));
    TensorPtr contents, codes, messages;
    RUSTFX_RETURN_IF_ERROR(AllocateOutput(ctx, 0, TF_STRING, paths.dims, &contents));
    RUSTFX_RETURN_IF_ERROR(AllocateOutput(ctx, 1, TF_INT32, paths.dims, &codes));
    RUSTFX_RETURN_IF_ERROR(AllocateOutput(ctx, 2, TF_STRING, paths.dims, &messages));
    TF_TString* content_flat = Data<TF_TString>(contents);
    int32_t* code_flat = Data<int32_t>(codes);
    TF_TString* message_flat = Data<TF_TString>(messages);
    FirstError error;
    // Reading is I/O bound: each thread reads a range of paths.
    ForEachRange(paths.size, OpThreads(), [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        OpStatus status;
        try {
          status = FromCore(ReadInto(AsBytes(paths(i)), &content_flat[i]));
        } catch (const std::exception& e) {
          status = Internal(std::string(kName) + ": " + e.what());
        }
        code_flat[i] = static_cast<int32_t>(status.code);
        if (status.ok()) continue;
        TF_TString_ResizeUninitialized(&content_flat[i], 0);
        TF_TString_Copy(&message_flat[i], status.message.data(), status.message.size());
        if (on_error_ == OnError::Raise) error.Record(i, std::move(status));
      }
    });
    return error.status();
  }

 private:
  // Reads the file straight into `out`, sized by the size fstat reports
  // (capped by max_bytes), then appends whatever that size missed (a /proc
  // file says 0; a file may grow while read): no copy of the contents.
  Status ReadInto(rust::Slice<const uint8_t> path, TF_TString* out) const {
    rust::Box<FileReader> file = open_file(path);
    Status status = file->status();
    if (status.code != StatusCode::Ok) return status;
    const uint64_t max = static_cast<uint64_t>(max_bytes_);
    const uint64_t want = std::min<uint64_t>(file->size_hint(), max);
    char* data = TF_TString_ResizeUninitialized(out, want);
    ReadChunk head = file->read_into(rust::Slice<uint8_t>(reinterpret_cast<uint8_t*>(data), want));
    if (head.status.code != StatusCode::Ok) return std::move(head.status);
    TF_TString_ResizeUninitialized(out, head.len);
    if (head.len == want && want < max) {
      rust::Vec<uint8_t> rest;
      status = file->read_rest(max - want, rest);
      if (status.code != StatusCode::Ok) return status;
      TF_TString_AppendN(out, reinterpret_cast<const char*>(rest.data()), rest.size());
    }
    return status;
  }

  int64_t max_bytes_ = 0;
  OnError on_error_ = OnError::Raise;
};

// A digest of each element of `input`, as 64 lowercase hex digits:
// Rustfx>Sha256, the SHA-256 (what hashlib.sha256(x).hexdigest() and
// sha256sum print; corpus extraction's sha256 column), and
// Rustfx>ContentKey, the feature cache's content key, a BLAKE3 (what b3sum
// prints).
template <typename Digest>
class HexDigestKernel {
 public:
  static constexpr const char* kName = Digest::kName;

  OpStatus Init(TF_OpKernelConstruction*, const Attrs&) { return {}; }

  OpStatus Compute(TF_OpKernelContext* ctx) const {
    StringInput input;
    RUSTFX_RETURN_IF_ERROR(GetStringInput(ctx, 0, &input));
    TensorPtr digests;
    RUSTFX_RETURN_IF_ERROR(AllocateOutput(ctx, 0, TF_STRING, input.dims, &digests));
    TF_TString* digest_flat = Data<TF_TString>(digests);
    FirstError error;
    ForEachRange(input.size, OpThreads(), [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        try {
          rust::String hex = Digest::Hex(AsBytes(input(i)));
          TF_TString_Copy(&digest_flat[i], hex.data(), hex.size());
        } catch (const rust::Error& e) {
          error.Record(i, Internal(e.what()));
        }
      }
    });
    return error.status();
  }

 private:
};

struct Sha256 {
  static constexpr char kName[] = "Rustfx>Sha256";
  static rust::String Hex(rust::Slice<const uint8_t> data) { return sha256_hex(data); }
};
struct ContentKey {
  static constexpr char kName[] = "Rustfx>ContentKey";
  static rust::String Hex(rust::Slice<const uint8_t> data) { return content_key_hex(data); }
};

void ThreeOutputsLikeInput(TF_ShapeInferenceContext* ctx, TF_Status* status) {
  EveryOutputIsInputShape(ctx, status, 3);
}
void OneOutputLikeInput(TF_ShapeInferenceContext* ctx, TF_Status* status) {
  EveryOutputIsInputShape(ctx, status, 1);
}

void RegisterReadOps() {
  RegisterOp({ReadFilesKernel::kName,
              {"paths: string"},
              {"contents: string", "status_codes: int32", "status_messages: string"},
              {"max_bytes: int", "on_error: string = 'raise'"},
              ThreeOutputsLikeInput});
  RegisterKernel<ReadFilesKernel>(ReadFilesKernel::kName, "RustfxReadFiles");
  RegisterOp({Sha256::kName, {"input: string"}, {"digests: string"}, {}, OneOutputLikeInput});
  RegisterKernel<HexDigestKernel<Sha256>>(Sha256::kName, "RustfxSha256");
  RegisterOp({ContentKey::kName, {"input: string"}, {"digests: string"}, {}, OneOutputLikeInput});
  RegisterKernel<HexDigestKernel<ContentKey>>(ContentKey::kName, "RustfxContentKey");
}

// tf.load_op_library runs the library's static initializers, not
// TF_InitKernel.
const bool registered = (RegisterReadOps(), true);

}  // namespace
}  // namespace rustfx
