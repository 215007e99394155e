// Names and sizes of the number formats (core/dtype.h).
#include "core/dtype.h"

namespace pipescope {

std::string to_string(Dtype dtype) {
  switch (dtype) {
    case Dtype::Bf16: return "bf16";
    case Dtype::Fp16: return "fp16";
    case Dtype::Fp32: break;
  }
  return "fp32";
}

std::optional<Dtype> dtype_from_name(const std::string& name) {
  for (Dtype d : {Dtype::Fp32, Dtype::Bf16, Dtype::Fp16}) {
    if (name == to_string(d)) return d;
  }
  return std::nullopt;
}

int dtype_bytes(Dtype dtype) { return dtype == Dtype::Fp32 ? 4 : 2; }

}  // namespace pipescope
