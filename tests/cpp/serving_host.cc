// A minimal C++ serving host, linked the way a TF Serving build links
// rustfx: the kernels, the bridge and the Rust core come from the static
// library librustfx_ops.a, linked whole (their op and kernel registrations are
// static initializers nothing references), and no op library is loaded at
// run time. It loads a SavedModel (tag "serve"), feeds the given files'
// bytes as one batch of strings to a signature, and prints per file its path
// and the signature's first output row, every value exact (floats as C99
// hex floats).
//
//   serving_host MODEL_DIR SIGNATURE FILE...
//
// Build: `make serving-host` (BUILD_NOTES.md, "TF Serving").
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tensorflow/cc/saved_model/loader.h"
#include "tensorflow/core/framework/tensor.h"
#include "tensorflow/core/public/session.h"

namespace {

int Fail(const std::string& message) {
  std::fprintf(stderr, "serving_host: %s\n", message.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) return Fail("usage: serving_host MODEL_DIR SIGNATURE FILE...");
  const std::string model_dir = argv[1], signature = argv[2];

  tensorflow::SavedModelBundle bundle;
  absl::Status status = tensorflow::LoadSavedModel(
      tensorflow::SessionOptions(), tensorflow::RunOptions(), model_dir,
      {"serve"}, &bundle);
  if (!status.ok()) return Fail("loading " + model_dir + ": " + status.ToString());

  const auto& signatures = bundle.meta_graph_def.signature_def();
  auto found = signatures.find(signature);
  if (found == signatures.end()) return Fail("no signature " + signature);
  const auto& def = found->second;
  if (def.inputs().size() != 1) return Fail("the signature must take one input");
  const auto& input = def.inputs().begin()->second;
  if (input.dtype() != tensorflow::DT_STRING) {
    return Fail("the signature's input must be tf.string");
  }
  // The first output by name (the map is unordered).
  std::string output_key;
  for (const auto& [key, info] : def.outputs()) {
    if (output_key.empty() || key < output_key) output_key = key;
  }
  const std::string output_name = def.outputs().at(output_key).name();

  const int64_t n = argc - 3;
  tensorflow::Tensor batch(tensorflow::DT_STRING, tensorflow::TensorShape({n}));
  for (int64_t i = 0; i < n; ++i) {
    std::ifstream file(argv[3 + i], std::ios::binary);
    if (!file) return Fail(std::string("cannot read ") + argv[3 + i]);
    std::stringstream bytes;
    bytes << file.rdbuf();
    batch.flat<tensorflow::tstring>()(i) = bytes.str();
  }

  std::vector<tensorflow::Tensor> outputs;
  status = bundle.session->Run({{input.name(), batch}}, {output_name}, {}, &outputs);
  if (!status.ok()) return Fail("running " + signature + ": " + status.ToString());
  const tensorflow::Tensor& out = outputs[0];
  if (out.dims() != 2 || out.dim_size(0) != n) {
    return Fail("expected an output of shape [files, width], got " +
                out.shape().DebugString());
  }
  const int64_t width = out.dim_size(1);
  for (int64_t i = 0; i < n; ++i) {
    std::printf("%s", argv[3 + i]);
    for (int64_t j = 0; j < width; ++j) {
      switch (out.dtype()) {
        case tensorflow::DT_FLOAT:
          std::printf(" %a", out.matrix<float>()(i, j));
          break;
        case tensorflow::DT_INT32:
          std::printf(" %d", out.matrix<int32_t>()(i, j));
          break;
        case tensorflow::DT_INT64:
          std::printf(" %lld", static_cast<long long>(out.matrix<int64_t>()(i, j)));
          break;
        default:
          return Fail("unsupported output dtype " + tensorflow::DataTypeString(out.dtype()));
      }
    }
    std::printf("\n");
  }
  return 0;
}
