// The dtype table: each of the bridge's DType values (src/bridge.rs, the
// core's output::DType) as TensorFlow's TF_DataType, with its size and its
// name in op attrs. The one place C++ lists dtypes: a kernel serves every
// dtype of its layout through this table, so a new dtype is a row here.
#ifndef RUSTFX_CPP_DTYPES_H_
#define RUSTFX_CPP_DTYPES_H_

#include <cstddef>
#include <cstdint>

#include "rustfx/src/bridge.rs.h"
#include "tensorflow/c/tf_datatype.h"
#include "tensorflow/c/tf_tstring.h"

namespace rustfx {

struct DTypeInfo {
  DType dtype;
  TF_DataType tf;
  // Bytes per value in a tensor (strings: a TF_TString each).
  size_t size;
  // The name in an op's type attr list ("Tout: {...}").
  const char* attr_name;
};

inline constexpr DTypeInfo kDTypes[] = {
    {DType::Float32, TF_FLOAT, 4, "float"},
    {DType::Int64, TF_INT64, 8, "int64"},
    {DType::Int32, TF_INT32, 4, "int32"},
    {DType::Int16, TF_INT16, 2, "int16"},
    {DType::UInt16, TF_UINT16, 2, "uint16"},
    {DType::UInt8, TF_UINT8, 1, "uint8"},
    {DType::String, TF_STRING, sizeof(TF_TString), "string"},
};
inline constexpr size_t kDTypeCount = sizeof(kDTypes) / sizeof(kDTypes[0]);

// Row i is DType i: the table follows the bridge's enum, checked here.
constexpr bool RowsFollowTheEnum() {
  for (size_t i = 0; i < kDTypeCount; ++i) {
    if (static_cast<size_t>(kDTypes[i].dtype) != i) return false;
  }
  return static_cast<size_t>(DType::String) + 1 == kDTypeCount;
}
static_assert(RowsFollowTheEnum(), "cpp/dtypes.h: one row per bridge DType, in its order");

inline const DTypeInfo& Info(DType dtype) { return kDTypes[static_cast<size_t>(dtype)]; }

}  // namespace rustfx

#endif  // RUSTFX_CPP_DTYPES_H_
