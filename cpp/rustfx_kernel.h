// What every op family shares: running Rust calls over a batch on TF's
// thread pool, turning Rust errors into statuses, reading enum attrs through
// the core's parsers, where an op's documents come from
// (RUSTFX_SOURCE_ATTRS), and ComputeRows, which fills a dense output.
// The extractor ops themselves are in extract_ops.cc.
#ifndef RUSTFX_CPP_RUSTFX_KERNEL_H_
#define RUSTFX_CPP_RUSTFX_KERNEL_H_

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <memory>
#include <cstdint>
#include <functional>
#include <limits>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "document_chunk.h"
#include "rust/cxx.h"
#include "rustfx/src/bridge.rs.h"
#include "tensorflow/core/framework/op_kernel.h"
#include "tensorflow/core/framework/shape_inference.h"
#include "tensorflow/core/framework/tensor.h"
#include "tensorflow/core/util/work_sharder.h"

namespace rustfx {

inline rust::Slice<const uint8_t> AsBytes(const tensorflow::tstring& s) {
  return rust::Slice<const uint8_t>(reinterpret_cast<const uint8_t*>(s.data()),
                                    s.size());
}

// Runs `construct` (which calls a Rust constructor that validates attrs);
// a rust::Error becomes InvalidArgument with the core's message, which says
// what is allowed.
template <typename Construct>
absl::Status InvalidArgumentIfThrows(Construct&& construct) {
  try {
    construct();
    return absl::OkStatus();
  } catch (const rust::Error& e) {
    return absl::InvalidArgumentError(e.what());
  }
}

// Reads the string attr `name` and parses it with the core's `from_name`
// (`parse` is one of the bridge's parse_* functions).
template <typename AttrSource, typename Enum>
absl::Status GetEnumAttr(AttrSource* attrs, const char* name,
                         Enum (*parse)(rust::Str), Enum* value) {
  std::string text;
  TF_RETURN_IF_ERROR(attrs->GetAttr(name, &text));
  return InvalidArgumentIfThrows([&] { *value = parse(text); });
}

// The attrs of every extractor op that say where its documents come from
// (rustfx.files in Python): its input strings, or the files they name, each
// read by read_files' rules. Read by GetDocumentSource.
#define RUSTFX_SOURCE_ATTRS                     \
  Attr("read_files: bool = false")              \
      .Attr("read_max_bytes: int = 0")          \
      .Attr("read_on_error: string = 'raise'")

template <typename AttrSource>
absl::Status GetDocumentSource(AttrSource* attrs,
                               std::optional<rust::Box<DocumentSource>>* source) {
  bool read_files = false;
  int64_t max_bytes = 0;
  OnError on_error;
  TF_RETURN_IF_ERROR(attrs->GetAttr("read_files", &read_files));
  TF_RETURN_IF_ERROR(attrs->GetAttr("read_max_bytes", &max_bytes));
  TF_RETURN_IF_ERROR(
      GetEnumAttr(attrs, "read_on_error", parse_on_error, &on_error));
  return InvalidArgumentIfThrows([&] {
    source->emplace(new_document_source(read_files, max_bytes, on_error));
  });
}

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

// Runs `work(c)` for every chunk c in [0, chunks) on runners of the
// intra-op pool: each runner takes the next chunk off an atomic counter
// until none is left, so the work is handed out as threads free up. The
// calling thread is one runner; the others are scheduled on the pool, and
// the caller waits only for those that started. A helper that starts after
// the chunks are gone finds `closed` and returns without touching this
// frame. (Shard would wait for every runner to start: under tf.data's
// parallel calls the pool threads are busy with other batches, and the
// caller sat idle.) At most the pool's num_threads runners, which tf.data
// sets from its per-iterator limit; a private pool would oversubscribe
// under num_parallel_calls.
inline void RunChunks(tensorflow::OpKernelContext* ctx, int64_t chunks,
                      const std::function<void(int64_t)>& work) {
  auto* pool = ctx->device()->tensorflow_cpu_worker_threads();
  struct Helpers {
    std::atomic<int64_t> next_chunk{0};
    std::mutex mu;
    std::condition_variable done;
    int active = 0;
    bool closed = false;
  };
  auto helpers = std::make_shared<Helpers>();
  auto run_chunks = [&work, chunks](Helpers& h) {
    for (int64_t c = h.next_chunk.fetch_add(1); c < chunks; c = h.next_chunk.fetch_add(1)) {
      work(c);
    }
  };
  // A call that starts while other calls are running their chunks takes
  // only the threads they leave: under tf.data's parallel calls the
  // batches already keep every core busy, and helpers would only add
  // wake-ups and waits (README's pipeline: 8-13% faster without them).
  // One call at a time (eager, num_parallel_calls=1) still uses them all.
  static std::atomic<int> calls_running{0};
  const int others = calls_running.fetch_add(1);
  struct Leave {
    ~Leave() { calls_running.fetch_sub(1); }
  } leave;
  const int64_t runners = std::min<int64_t>(
      std::max<int64_t>(1, pool->num_threads - others), chunks);
  for (int64_t r = 1; r < runners; ++r) {
    pool->workers->Schedule([helpers, &run_chunks] {
      {
        std::lock_guard<std::mutex> lock(helpers->mu);
        if (helpers->closed) return;
        ++helpers->active;
      }
      run_chunks(*helpers);
      std::lock_guard<std::mutex> lock(helpers->mu);
      if (--helpers->active == 0) helpers->done.notify_all();
    });
  }
  run_chunks(*helpers);
  std::unique_lock<std::mutex> lock(helpers->mu);
  helpers->closed = true;
  helpers->done.wait(lock, [&] { return helpers->active == 0; });
}

// Runs `work(i)` for i in [0, n) on TF's intra-op pool through Shard, which
// respects tf.data's per-thread parallelism limits. `cost_per_element` is a
// rough cycle count; Shard only uses it to decide how finely to split.
// (RunChunks' way, tried for read_files, made the pipeline of README's
// Speed section 10% slower.)
inline void ForEachElement(tensorflow::OpKernelContext* ctx, int64_t n,
                           int64_t cost_per_element,
                           const std::function<void(int64_t)>& work) {
  if (n == 0) return;
  auto* pool = ctx->device()->tensorflow_cpu_worker_threads();
  tensorflow::Shard(pool->num_threads, pool->workers, n, cost_per_element,
                    [&work](int64_t begin, int64_t end) {
                      for (int64_t i = begin; i < end; ++i) work(i);
                    });
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
// still split), handed out by RunChunks as the threads free up. A static
// split by bytes (what Shard does) leaves a thread idle whenever bytes
// cost unequal time (Python against C headers, a busy core): measured, the
// two threads of a word-ids batch finished 11% apart. A small batch, or
// one thread, runs its chunks in order on the calling thread. One huge document still runs on one thread,
// alongside the other chunks. An extractor that stops early
// (`work_bytes_cap`) costs no more for a longer document: counting all of
// it would unbalance the threads.
inline DocumentChunks PlanChunks(tensorflow::OpKernelContext* ctx, const DocumentSource& source,
                                 const tensorflow::TTypes<tensorflow::tstring>::ConstFlat& input,
                                 int64_t cost_per_byte,
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
  const int64_t n = input.size();
  DocumentChunks chunks;
  if (n == 0) return chunks;
  const bool files = source.reads_files();
  // Capped so that the sum stays far from int64's limit whatever the
  // sizes (a string element is below 2 GiB anyway).
  auto work_bytes = [&](int64_t i) {
    const uint64_t bytes = files ? kAssumedFileBytes : input(i).size();
    return static_cast<int64_t>(std::min<uint64_t>({bytes, work_bytes_cap, 1ULL << 40})) + 1;
  };
  const int64_t threads = ctx->device()->tensorflow_cpu_worker_threads()->num_threads;
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
// so an idle TF thread holds at most this much.
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
inline absl::Status ForEachChunk(
    tensorflow::OpKernelContext* ctx, const DocumentSource& source,
    const tensorflow::TTypes<tensorflow::tstring>::ConstFlat& input, const DocumentChunks& chunks,
    const std::function<void(int64_t, int64_t, const DocumentChunk&)>& work) {
  FirstError error;
  const std::string& op = ctx->op_kernel().type_string();
  const bool files = source.reads_files();
  auto run_chunk = [&](int64_t c) {
    const int64_t begin = chunks.begin(c), end = chunks.end(c);
    if (!files) {
      try {
        work(c, begin, DocumentChunk(input.data() + begin, static_cast<size_t>(end - begin)));
      } catch (const std::exception& e) {
        error.Record(begin, absl::InternalError(op + ": " + e.what()));
      }
      return;
    }
    thread_local rust::Vec<uint8_t> buffer;
    for (int64_t i = begin; i < end; ++i) {
      try {
        Status status = source.read_document(AsBytes(input(i)), buffer);
        if (status.code != StatusCode::Ok) {
          error.Record(i, absl::Status(static_cast<absl::StatusCode>(status.code),
                                       std::string(status.message)));
          continue;
        }
        work(c, i, DocumentChunk(rust::Slice<const uint8_t>(buffer.data(), buffer.size())));
        if (buffer.capacity() > kKeptReadBufferBytes) buffer = rust::Vec<uint8_t>();
      } catch (const std::exception& e) {
        error.Record(i, absl::InternalError(op + ": " + e.what()));
      }
    }
  };
  if (chunks.parallel && chunks.count() > 1) {
    RunChunks(ctx, chunks.count(), run_chunk);
  } else {
    for (int64_t c = 0; c < chunks.count(); ++c) run_chunk(c);
  }
  return error.status();
}

// Output 0 := input.shape + [width].
inline absl::Status AppendDim(tensorflow::shape_inference::InferenceContext* c,
                              int64_t width) {
  tensorflow::shape_inference::ShapeHandle out;
  TF_RETURN_IF_ERROR(c->Concatenate(c->input(0), c->Vector(width), &out));
  c->set_output(0, out);
  return absl::OkStatus();
}

// Runs `write(docs, rows)` over every chunk of documents of input 0 (see
// ForEachChunk) into output 0, of shape input.shape + [width]: `rows` is
// the rows of `docs`, end to end. `write` throws rust::Error on a bug.
template <typename T, typename Write>
void ComputeRows(tensorflow::OpKernelContext* ctx, const DocumentSource& source,
                 int64_t width, int64_t cost_per_byte, uint64_t work_bytes_cap,
                 Write write) {
  const tensorflow::Tensor& input = ctx->input(0);
  tensorflow::TensorShape shape = input.shape();
  OP_REQUIRES_OK(ctx, shape.AddDimWithStatus(width));
  tensorflow::Tensor* output = nullptr;
  OP_REQUIRES_OK(ctx, ctx->allocate_output(0, shape, &output));
  T* rows = output->flat<T>().data();
  auto docs = input.flat<tensorflow::tstring>();
  const DocumentChunks chunks = PlanChunks(ctx, source, docs, cost_per_byte, work_bytes_cap);
  OP_REQUIRES_OK(ctx, ForEachChunk(ctx, source, docs, chunks,
                                   [&](int64_t, int64_t first, const DocumentChunk& chunk) {
                                     write(chunk, rust::Slice<T>(rows + first * width,
                                                                 chunk.len() * width));
                                   }));
}
}  // namespace rustfx

#endif  // RUSTFX_CPP_RUSTFX_KERNEL_H_
