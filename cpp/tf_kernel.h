// What every op family shares, on TensorFlow's C kernel API only
// (tensorflow/c/kernels.h, ops.h, tf_tensor.h, tf_tstring.h): no TF C++
// type or Abseil symbol, so one op library loads into every TF whose C API
// it uses (BUILD_NOTES.md, "One op library for every TensorFlow").
//
// - OpStatus, TfStatus, TensorPtr: RAII over the C handles and statuses.
// - Attrs: a kernel's attrs at construction.
// - RegisterOp, RegisterKernel: an op definition and a kernel class (Init,
//   Compute returning OpStatus; exceptions become Internal errors).
// - PlanChunks, ForEachChunk, ForEachRange: a batch's documents in chunks,
//   run on the core's threads (src/op_threads.rs) with the caller's.
// The extractor ops: extract_ops.cc (their base: extractor_kernel.h);
// read_files and the digests: read_files_op.cc; cache stats: cache_ops.cc.
#ifndef RUSTFX_CPP_TF_KERNEL_H_
#define RUSTFX_CPP_TF_KERNEL_H_

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <initializer_list>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "chunk_work.h"
#include "document_chunk.h"
#include "rust/cxx.h"
#include "rustfx/src/bridge.rs.h"
#include "tensorflow/c/kernels.h"
#include "tensorflow/c/ops.h"
#include "tensorflow/c/tf_status.h"
#include "tensorflow/c/tf_tensor.h"
#include "tensorflow/c/tf_tstring.h"

namespace rustfx {

// ---- Statuses ------------------------------------------------------------------

// An outcome: TF_OK, or a TF error code and its message.
struct OpStatus {
  TF_Code code = TF_OK;
  std::string message;
  bool ok() const { return code == TF_OK; }
};

inline OpStatus InvalidArgument(std::string message) {
  return {TF_INVALID_ARGUMENT, std::move(message)};
}
inline OpStatus Internal(std::string message) { return {TF_INTERNAL, std::move(message)}; }

#define RUSTFX_RETURN_IF_ERROR(expr)          \
  do {                                        \
    ::rustfx::OpStatus rustfx_status_ = (expr); \
    if (!rustfx_status_.ok()) return rustfx_status_; \
  } while (0)

// A TF_Status owned for one call.
class TfStatus {
 public:
  TfStatus() : status_(TF_NewStatus()) {}
  ~TfStatus() { TF_DeleteStatus(status_); }
  TfStatus(const TfStatus&) = delete;
  TfStatus& operator=(const TfStatus&) = delete;
  TF_Status* get() const { return status_; }
  OpStatus status() const {
    if (TF_GetCode(status_) == TF_OK) return {};
    return {TF_GetCode(status_), TF_Message(status_)};
  }

 private:
  TF_Status* status_;
};

// A status of the core's (bridge.rs `Status`; its codes are TF's).
inline OpStatus FromCore(const Status& status) {
  if (status.code == StatusCode::Ok) return {};
  return {static_cast<TF_Code>(status.code), std::string(status.message)};
}

// Runs `construct` (which calls a Rust constructor that validates its
// arguments): a rust::Error becomes InvalidArgument with the core's
// message, which says what is allowed.
template <typename Construct>
OpStatus InvalidArgumentIfThrows(Construct&& construct) {
  try {
    construct();
    return {};
  } catch (const rust::Error& e) {
    return InvalidArgument(e.what());
  }
}

// ---- Tensors -------------------------------------------------------------------

struct TensorDeleter {
  void operator()(TF_Tensor* t) const { TF_DeleteTensor(t); }
};
using TensorPtr = std::unique_ptr<TF_Tensor, TensorDeleter>;

inline int64_t NumElements(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

// A string input tensor: its shape and its elements.
struct StringInput {
  TensorPtr tensor;
  std::vector<int64_t> dims;
  const TF_TString* strings = nullptr;
  int64_t size = 0;
  const TF_TString& operator()(int64_t i) const { return strings[i]; }
};

inline OpStatus GetStringInput(TF_OpKernelContext* ctx, int index, StringInput* input) {
  TfStatus status;
  TF_Tensor* tensor = nullptr;
  TF_GetInput(ctx, index, &tensor, status.get());
  RUSTFX_RETURN_IF_ERROR(status.status());
  input->tensor.reset(tensor);
  if (TF_TensorType(tensor) != TF_STRING) return InvalidArgument("input must be a string tensor");
  input->dims.resize(TF_NumDims(tensor));
  for (size_t d = 0; d < input->dims.size(); ++d) input->dims[d] = TF_Dim(tensor, d);
  input->size = TF_TensorElementCount(tensor);
  input->strings = static_cast<const TF_TString*>(TF_TensorData(tensor));
  return {};
}

inline size_t ElementBytes(TF_DataType dtype) {
  return dtype == TF_STRING ? sizeof(TF_TString) : TF_DataTypeSize(dtype);
}

// Output `index` of shape `dims`; TF_STRING elements come initialized
// (empty strings).
inline OpStatus AllocateOutput(TF_OpKernelContext* ctx, int index, TF_DataType dtype,
                               const std::vector<int64_t>& dims, TensorPtr* out) {
  TfStatus status;
  const size_t bytes = static_cast<size_t>(NumElements(dims)) * ElementBytes(dtype);
  out->reset(TF_AllocateOutput(ctx, index, dtype, dims.data(), static_cast<int>(dims.size()),
                               bytes, status.get()));
  RUSTFX_RETURN_IF_ERROR(status.status());
  if (!*out) return Internal("TF_AllocateOutput returned no tensor");
  return {};
}

template <typename T>
T* Data(const TensorPtr& t) {
  return static_cast<T*>(TF_TensorData(t.get()));
}

// A buffer of values of one dtype that grows, in TF's own allocator (a
// temp tensor: it reuses memory across calls, where a malloc'ed buffer of
// this size is a fresh mmap that faults in every page each call: 34% of
// whitespace ids of text files on one thread). An output whose size is only
// known at the end is a view of its first elements (TF_NewTensor over the
// temp's data, keeping the temp alive until TF frees the view), not a copy.
// Sizes and capacities count values; data() is their bytes.
class ValueBuffer {
 public:
  ValueBuffer(TF_OpKernelContext* ctx, TF_DataType dtype, size_t value_size)
      : ctx_(ctx), dtype_(dtype), size_(value_size) {}

  int64_t capacity() const { return capacity_; }
  uint8_t* data() const { return data_; }
  size_t value_size() const { return size_; }

  // Room for `capacity` values, the first `used` kept.
  OpStatus Reserve(int64_t capacity, int64_t used) {
    TfStatus status;
    TF_AllocatorAttributes attrs{TF_ALLOCATOR_ATTRIBUTES_STRUCT_SIZE, 1};
    const int64_t dims[1] = {std::max<int64_t>(capacity, 0)};
    TensorPtr bigger(TF_AllocateTemp(ctx_, dtype_, dims, 1, &attrs, status.get()));
    RUSTFX_RETURN_IF_ERROR(status.status());
    if (!bigger) return Internal("TF_AllocateTemp returned no tensor");
    auto* bigger_data = static_cast<uint8_t*>(TF_TensorData(bigger.get()));
    if (used > 0) std::memcpy(bigger_data, data_, static_cast<size_t>(used) * size_);
    tensor_ = std::move(bigger);
    data_ = bigger_data;
    capacity_ = dims[0];
    return {};
  }

  // Output `index` := the first `used` values, as a vector.
  OpStatus SetOutput(int64_t index, int64_t used) {
    if (!tensor_) RUSTFX_RETURN_IF_ERROR(Reserve(0, 0));
    TfStatus status;
    if (used == capacity_) {
      TF_SetOutput(ctx_, static_cast<int>(index), tensor_.get(), status.get());
      return status.status();
    }
    const int64_t dims[1] = {used};
    TF_Tensor* owner = tensor_.release();
    TensorPtr view(TF_NewTensor(
        dtype_, dims, 1, data_, static_cast<size_t>(used) * size_,
        [](void*, size_t, void* owner) { TF_DeleteTensor(static_cast<TF_Tensor*>(owner)); },
        owner));
    if (!view) return Internal("TF_NewTensor returned no tensor");
    TF_SetOutput(ctx_, static_cast<int>(index), view.get(), status.get());
    return status.status();
  }

 private:
  TF_OpKernelContext* ctx_;
  TF_DataType dtype_;
  size_t size_;
  TensorPtr tensor_;
  uint8_t* data_ = nullptr;
  int64_t capacity_ = 0;
};

// ---- Attrs ---------------------------------------------------------------------

// A kernel's attrs, read at construction.
class Attrs {
 public:
  explicit Attrs(TF_OpKernelConstruction* ctx) : ctx_(ctx) {}

  OpStatus String(const char* name, std::string* value) const {
    TfStatus status;
    int32_t list_size = 0, total_size = 0;
    TF_OpKernelConstruction_GetAttrSize(ctx_, name, &list_size, &total_size, status.get());
    RUSTFX_RETURN_IF_ERROR(status.status());
    value->assign(static_cast<size_t>(std::max(total_size, 0)), '\0');
    TF_OpKernelConstruction_GetAttrString(ctx_, name, value->data(), value->size(), status.get());
    return status.status();
  }
  OpStatus Bool(const char* name, bool* value) const {
    TfStatus status;
    TF_Bool b = 0;
    TF_OpKernelConstruction_GetAttrBool(ctx_, name, &b, status.get());
    *value = b != 0;
    return status.status();
  }
  OpStatus Int64(const char* name, int64_t* value) const {
    TfStatus status;
    TF_OpKernelConstruction_GetAttrInt64(ctx_, name, value, status.get());
    return status.status();
  }
  OpStatus Type(const char* name, TF_DataType* value) const {
    TfStatus status;
    TF_OpKernelConstruction_GetAttrType(ctx_, name, value, status.get());
    return status.status();
  }
  // The string attr `name`, parsed by the core's `from_name` (`parse` is
  // one of the bridge's parse_* functions).
  template <typename E>
  OpStatus Enum(const char* name, E (*parse)(rust::Str), E* value) const {
    std::string text;
    RUSTFX_RETURN_IF_ERROR(String(name, &text));
    return InvalidArgumentIfThrows([&] { *value = parse(text); });
  }

 private:
  TF_OpKernelConstruction* ctx_;
};

// The attrs of every extractor op that say where its documents come from
// (rustfx.files in Python): its input strings, or the files they name, each
// read by read_files' rules.
inline constexpr const char* kSourceAttrs[] = {
    "read_files: bool = false",
    "read_max_bytes: int = 0",
    "read_on_error: string = 'raise'",
};

inline OpStatus GetDocumentSource(const Attrs& attrs,
                                  std::optional<rust::Box<DocumentSource>>* source) {
  bool read_files = false;
  int64_t max_bytes = 0;
  OnError on_error;
  RUSTFX_RETURN_IF_ERROR(attrs.Bool("read_files", &read_files));
  RUSTFX_RETURN_IF_ERROR(attrs.Int64("read_max_bytes", &max_bytes));
  RUSTFX_RETURN_IF_ERROR(attrs.Enum("read_on_error", parse_on_error, &on_error));
  return InvalidArgumentIfThrows(
      [&] { source->emplace(new_document_source(read_files, max_bytes, on_error)); });
}

// ---- Registration --------------------------------------------------------------

// An op's definition: its inputs, outputs and attrs in TF's op-def syntax
// ("name: type"), its shape function. (The C API has no op doc; the
// Python wrappers document the ops.)
struct OpDefinition {
  const char* name;
  std::vector<const char*> inputs;
  std::vector<const char*> outputs;
  std::vector<const char*> attrs;
  void (*shape)(TF_ShapeInferenceContext*, TF_Status*);
  bool stateful = false;
};

// Registration runs from static initializers (tf.load_op_library does not
// call TF_InitKernel), where nothing can be returned: a failure is printed.
inline void ReportRegistration(const char* what, const char* name, const TfStatus& status) {
  if (TF_GetCode(status.get()) != TF_OK) {
    std::fprintf(stderr, "rustfx: cannot register %s %s: %s\n", what, name,
                 TF_Message(status.get()));
  }
}

inline void RegisterOp(const OpDefinition& op) {
  TF_OpDefinitionBuilder* builder = TF_NewOpDefinitionBuilder(op.name);
  for (const char* input : op.inputs) TF_OpDefinitionBuilderAddInput(builder, input);
  for (const char* output : op.outputs) TF_OpDefinitionBuilderAddOutput(builder, output);
  for (const char* attr : op.attrs) TF_OpDefinitionBuilderAddAttr(builder, attr);
  if (op.stateful) TF_OpDefinitionBuilderSetIsStateful(builder, true);
  TF_OpDefinitionBuilderSetShapeInferenceFunction(builder, op.shape);
  TfStatus status;
  TF_RegisterOpDefinition(builder, status.get());  // Takes the builder.
  ReportRegistration("op", op.name, status);
}

inline void Fail(TF_OpKernelContext* ctx, const OpStatus& error) {
  TfStatus status;
  TF_SetStatus(status.get(), error.code, error.message.c_str());
  TF_OpKernelContext_Failure(ctx, status.get());
}

// Registers `Kernel` as the CPU kernel of `op` (with a type constraint, if
// given). A Kernel is default-constructible and has
// `OpStatus Init(TF_OpKernelConstruction*, const Attrs&)` and
// `OpStatus Compute(TF_OpKernelContext*) const`: TF calls Compute from many
// threads at once, so a kernel holds only what Init built.
template <typename Kernel>
void RegisterKernel(const char* op, const char* kernel_name,
                    std::optional<std::pair<const char*, TF_DataType>> type = std::nullopt) {
  auto create = [](TF_OpKernelConstruction* ctx) -> void* {
    OpStatus status;
    try {
      auto kernel = std::make_unique<Kernel>();
      status = kernel->Init(ctx, Attrs(ctx));
      if (status.ok()) return kernel.release();
    } catch (const std::exception& e) {
      status = Internal(std::string(Kernel::kName) + ": " + e.what());
    }
    TfStatus tf_status;
    TF_SetStatus(tf_status.get(), status.code, status.message.c_str());
    TF_OpKernelConstruction_Failure(ctx, tf_status.get());
    return nullptr;
  };
  auto compute = [](void* kernel, TF_OpKernelContext* ctx) {
    OpStatus status;
    try {
      status = static_cast<const Kernel*>(kernel)->Compute(ctx);
    } catch (const std::exception& e) {
      status = Internal(std::string(Kernel::kName) + ": " + e.what());
    }
    if (!status.ok()) Fail(ctx, status);
  };
  auto destroy = [](void* kernel) { delete static_cast<Kernel*>(kernel); };
  TF_KernelBuilder* builder = TF_NewKernelBuilder(op, "CPU", create, compute, destroy);
  TfStatus status;
  if (type) {
    TF_KernelBuilder_TypeConstraint(builder, type->first, type->second, status.get());
    ReportRegistration("kernel type constraint of", kernel_name, status);
  }
  TF_RegisterKernelBuilder(kernel_name, builder, status.get());  // Takes the builder.
  ReportRegistration("kernel", kernel_name, status);
}

// ---- Shapes --------------------------------------------------------------------

// A shape handle owned for one shape function.
class ShapeHandle {
 public:
  ShapeHandle() : handle_(TF_NewShapeHandle()) {}
  explicit ShapeHandle(TF_ShapeHandle* handle) : handle_(handle) {}
  ~ShapeHandle() { TF_DeleteShapeHandle(handle_); }
  ShapeHandle(const ShapeHandle&) = delete;
  ShapeHandle& operator=(const ShapeHandle&) = delete;
  TF_ShapeHandle* get() const { return handle_; }

 private:
  TF_ShapeHandle* handle_;
};

// A vector of `size` elements, or of unknown size (-1): the C API's
// VectorFromSize takes a size_t and passes it on as an int64 dimension,
// where -1 is TF's unknown dimension.
inline TF_ShapeHandle* Vector(TF_ShapeInferenceContext* ctx, int64_t size) {
  return TF_ShapeInferenceContextVectorFromSize(ctx, static_cast<size_t>(size));
}

// Output `index` := input 0's shape + [unknown]: the width of a spec's rows
// is in its `spec` attr, which a C API shape function cannot read. The
// Python wrappers and Keras layers set the static width from the spec.
inline void InputShapePlusUnknown(TF_ShapeInferenceContext* ctx, int index, TF_Status* status) {
  ShapeHandle input, last(Vector(ctx, -1)), out;
  TF_ShapeInferenceContextGetInput(ctx, 0, input.get(), status);
  if (TF_GetCode(status) != TF_OK) return;
  TF_ShapeInferenceContextConcatenateShapes(ctx, input.get(), last.get(), out.get(), status);
  if (TF_GetCode(status) != TF_OK) return;
  TF_ShapeInferenceContextSetOutput(ctx, index, out.get(), status);
}

// Every output := input 0's shape.
inline void EveryOutputIsInputShape(TF_ShapeInferenceContext* ctx, TF_Status* status, int outputs) {
  ShapeHandle input;
  TF_ShapeInferenceContextGetInput(ctx, 0, input.get(), status);
  for (int i = 0; i < outputs && TF_GetCode(status) == TF_OK; ++i) {
    TF_ShapeInferenceContextSetOutput(ctx, i, input.get(), status);
  }
}

// Input 0's number of elements, or -1 when a dimension is unknown.
inline int64_t InputElements(TF_ShapeInferenceContext* ctx, TF_Status* status) {
  ShapeHandle input;
  TF_ShapeInferenceContextGetInput(ctx, 0, input.get(), status);
  if (TF_GetCode(status) != TF_OK || !TF_ShapeInferenceContextRankKnown(ctx, input.get())) {
    return -1;
  }
  int64_t n = 1;
  const int64_t rank = TF_ShapeInferenceContextRank(ctx, input.get());
  for (int64_t d = 0; d < rank; ++d) {
    TF_DimensionHandle* dim = TF_NewDimensionHandle();
    TF_ShapeInferenceContextDim(ctx, input.get(), d, dim);
    const bool known = TF_DimensionHandleValueKnown(dim);
    const int64_t value = known ? TF_DimensionHandleValue(dim) : -1;
    TF_DeleteDimensionHandle(dim);
    if (!known) return -1;
    n *= value;
  }
  return n;
}

// ---- Threads and chunks --------------------------------------------------------

// How many threads a kernel's call may use (src/op_threads.rs):
// RUSTFX_NUM_THREADS or the cores, read once. Not the session's
// ConfigProto: TF's constant folding runs kernels with no function
// library, where TF_GetSerializedConfigProto dereferences a null pointer
// (a segfault in graph construction); the Python functions pass TF's
// intra-op setting on through RUSTFX_NUM_THREADS instead.
inline int64_t OpThreads() { return static_cast<int64_t>(default_threads()); }

// Runs `work(c)` for c in [0, chunks) on at most `threads` threads.
inline void RunChunks(int64_t chunks, int64_t threads, const std::function<void(int64_t)>& work) {
  if (chunks <= 0) return;
  if (chunks == 1 || threads <= 1) {
    for (int64_t c = 0; c < chunks; ++c) work(c);
    return;
  }
  const ChunkWork chunk_work(work);
  run_chunks(chunk_work, static_cast<size_t>(chunks), static_cast<size_t>(threads));
}

// Keeps the error of the lowest failing element, so the reported error does
// not depend on how the work was split between threads.
class FirstError {
 public:
  void Record(int64_t element, OpStatus status) {
    std::lock_guard<std::mutex> lock(mu_);
    if (element < element_) {
      element_ = element;
      status_ = std::move(status);
    }
  }
  OpStatus status() const { return status_; }

 private:
  std::mutex mu_;
  int64_t element_ = std::numeric_limits<int64_t>::max();
  OpStatus status_;
};

// Runs `work(begin, end)` over [0, n) split into ranges for `threads`
// threads: for work whose cost is per element (reading files, hashing,
// copying chunks out).
inline void ForEachRange(int64_t n, int64_t threads,
                         const std::function<void(int64_t, int64_t)>& work) {
  if (n <= 0) return;
  const int64_t ranges = std::min<int64_t>(n, std::max<int64_t>(1, threads) * 4);
  RunChunks(ranges, threads, [&](int64_t r) { work(n * r / ranges, n * (r + 1) / ranges); });
}

// An op's documents split into chunks of consecutive elements: chunk c is
// [starts[c], starts[c + 1]). A chunk is the unit of work of a thread and
// of a Rust call, and each chunk has its own output buffers, so the
// kernels never grow or free anything per document.
struct DocumentChunks {
  std::vector<int64_t> starts{0};
  // Whether the chunks may run on several threads (else in order on the
  // calling thread).
  bool parallel = false;
  int64_t threads = 1;
  int64_t count() const { return static_cast<int64_t>(starts.size()) - 1; }
  int64_t begin(int64_t c) const { return starts[c]; }
  int64_t end(int64_t c) const { return starts[c + 1]; }
};

// What a path weighs in the balance when the op reads the files itself:
// sizes are unknown until read, and opening one costs syscalls whatever
// its size (a typical text file).
constexpr uint64_t kAssumedFileBytes = 16384;

// Splits the documents of `input` into chunks balanced by bytes, not by
// element count: about total / (threads * kChunksPerThread) bytes each
// (each document also counts as one byte, so a batch of empty strings is
// still split), handed out as the threads free up. A static split by
// bytes leaves a thread idle whenever bytes cost unequal time (Python
// against C headers, a busy core): measured, the two threads of a
// word-ids batch finished 11% apart. A small batch, or one thread, runs
// its chunks in order on the calling thread. One huge document still runs
// on one thread, alongside the other chunks. An extractor that stops
// early (`work_bytes_cap`) costs no more for a longer document: counting
// all of it would unbalance the threads.
inline DocumentChunks PlanChunks(int64_t threads, const DocumentSource& source,
                                 const StringInput& input, int64_t cost_per_byte,
                                 uint64_t work_bytes_cap = std::numeric_limits<uint64_t>::max()) {
  // Below this many cycles of work a batch runs on the calling thread.
  constexpr int64_t kMinParallelCycles = 200000;
  // Chunks per runner: small enough to balance, large enough that taking
  // one (an atomic add) and its Rust call cost nothing.
  constexpr int64_t kChunksPerThread = 16;
  constexpr int64_t kMinChunkBytes = 16384;
  // At most this much input per chunk, even on one thread: a chunk's
  // outputs then stay in cache until the kernel copies them to the output
  // tensors (one chunk of a 200,000-line batch cost 20% more on ids).
  constexpr int64_t kMaxChunkBytes = 65536;
  const int64_t n = input.size;
  DocumentChunks chunks;
  chunks.threads = threads;
  if (n == 0) return chunks;
  const bool files = source.reads_files();
  // Capped so that the sum stays far from int64's limit whatever the
  // sizes (a string element is below 2 GiB anyway).
  auto work_bytes = [&](int64_t i) {
    const uint64_t bytes = files ? kAssumedFileBytes : TF_TString_GetSize(&input(i));
    return static_cast<int64_t>(std::min<uint64_t>({bytes, work_bytes_cap, 1ULL << 40})) + 1;
  };
  // The total only decides between threads (one pass over the sizes less
  // on one thread: 2% of short records).
  int64_t total = 0;
  if (threads > 1 && n > 1) {
    for (int64_t i = 0; i < n; ++i) total += work_bytes(i);
  }
  chunks.parallel = threads > 1 && n > 1 &&
                    total * std::max<int64_t>(1, cost_per_byte) >= kMinParallelCycles;
  const int64_t target =
      chunks.parallel
          ? std::clamp(total / (threads * kChunksPerThread), kMinChunkBytes, kMaxChunkBytes)
          : kMaxChunkBytes;
  int64_t bytes = 0;
  for (int64_t i = 0; i < n; ++i) {
    bytes += work_bytes(i);
    if (bytes >= target || i + 1 == n) {
      chunks.starts.push_back(i + 1);
      bytes = 0;
    }
  }
  return chunks;
}

// A thread's read buffer above this capacity is freed after its document,
// so an idle thread holds at most this much.
constexpr size_t kKeptReadBufferBytes = 4 << 20;

// Runs `work(c, first, docs)` for every chunk c of `chunks` (see
// PlanChunks), where `docs` are the documents from element `first` on:
// the chunk's input strings in one call, or, when `source` reads files,
// each file of the chunk in turn (one call per file, in order, on one
// thread, read into a buffer of that thread, so no batch of contents is
// ever held). A file that cannot be read (with read_on_error='raise')
// fails the op with its code and the message naming the path, as
// read_files does. Rust extractors only fail on a bug (a caught panic, a
// broken invariant), so an exception becomes Internal naming the op. The
// error of the lowest failing element is returned.
inline OpStatus ForEachChunk(
    const char* op, const DocumentSource& source, const StringInput& input,
    const DocumentChunks& chunks,
    const std::function<void(int64_t, int64_t, const DocumentChunk&)>& work) {
  FirstError error;
  const bool files = source.reads_files();
  auto run_chunk = [&](int64_t c) {
    const int64_t begin = chunks.begin(c), end = chunks.end(c);
    if (!files) {
      try {
        work(c, begin, DocumentChunk(input.strings + begin, static_cast<size_t>(end - begin)));
      } catch (const std::exception& e) {
        error.Record(begin, Internal(std::string(op) + ": " + e.what()));
      }
      return;
    }
    thread_local rust::Vec<uint8_t> buffer;
    for (int64_t i = begin; i < end; ++i) {
      try {
        OpStatus status = FromCore(source.read_document(AsBytes(input(i)), buffer));
        if (!status.ok()) {
          error.Record(i, std::move(status));
          continue;
        }
        work(c, i, DocumentChunk(rust::Slice<const uint8_t>(buffer.data(), buffer.size())));
        if (buffer.capacity() > kKeptReadBufferBytes) buffer = rust::Vec<uint8_t>();
      } catch (const std::exception& e) {
        error.Record(i, Internal(std::string(op) + ": " + e.what()));
      }
    }
  };
  if (chunks.parallel && chunks.count() > 1) {
    RunChunks(chunks.count(), chunks.threads, run_chunk);
  } else {
    for (int64_t c = 0; c < chunks.count(); ++c) run_chunk(c);
  }
  return error.status();
}

}  // namespace rustfx

#endif  // RUSTFX_CPP_TF_KERNEL_H_
