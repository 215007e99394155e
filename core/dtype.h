// The number format a profile's tensors are stored in. Profile files keep the name as
// written (a hand-written profile may name any format, or none); code that acts on the
// format reads it through dtype_from_name, and each reader names its own choices when
// it refuses one.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace pipescope {

enum class Dtype : uint8_t { Fp32, Bf16, Fp16 };
std::string to_string(Dtype dtype);                              // "fp32", "bf16", "fp16"
std::optional<Dtype> dtype_from_name(const std::string& name);  // nullopt for any other name
int dtype_bytes(Dtype dtype);                                    // 4, 2, 2

}  // namespace pipescope
