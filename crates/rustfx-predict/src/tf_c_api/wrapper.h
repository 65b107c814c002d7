// What build.rs hands bindgen (feature `predict`): TensorFlow's C API as
// the pip wheel ships it (c_api.h includes tf_status.h, tf_tensor.h,
// tf_buffer.h and tf_tstring.h). Only TF_* names are kept.
#include "tensorflow/c/c_api.h"
#include "tensorflow/c/tf_tstring.h"
