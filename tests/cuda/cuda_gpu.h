// Shared by the gpu-labelled tests: skip, naming the reason, when no GPU can be used;
// the relative error every CUDA result is held to against the CPU reference
// (fp32: 1e-4, bf16 storage with fp32 arithmetic: 2e-2).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "exec/cuda/cuda_api.h"

#define PS_REQUIRE_GPU()                                                                       \
  do {                                                                                         \
    const ::pipescope::exec::CudaStatus ps_status_ = ::pipescope::exec::cuda_status();         \
    if (ps_status_.devices == 0) GTEST_SKIP() << "no CUDA device: " << ps_status_.reason;      \
  } while (0)

namespace pipescope::test {

inline double tolerance(const std::string& dtype) { return dtype == "bf16" ? 2e-2 : 1e-4; }

// ||got - want||_2 / ||want||_2 (0 when both are zero).
inline double relative_error(const std::vector<float>& got, const std::vector<float>& want) {
  double diff = 0, norm = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    const double d = double(got.at(i)) - want[i];
    diff += d * d;
    norm += double(want[i]) * want[i];
  }
  if (norm == 0) return diff == 0 ? 0 : 1;
  return std::sqrt(diff / norm);
}

}  // namespace pipescope::test
