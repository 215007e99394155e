// See blas_kernels.h. Invariant: re-executes at most once (the child finds
// OPENBLAS_CORETYPE set and returns).
#include "exec/backends/blas_kernels.h"

#include <cblas.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace pipescope::exec {

namespace {

const char* native_coretype() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq")) {
    return "SkylakeX";
  }
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "Haswell";
#endif
  return nullptr;
}

}  // namespace

std::string blas_kernels() {
  const char* name = openblas_get_corename();
  return name != nullptr ? name : "unknown";
}

void use_native_blas_kernels(char** argv) {
  if (std::getenv("OPENBLAS_CORETYPE") != nullptr) return;  // chosen already (by us or by the user)
  const std::string current = blas_kernels();
  if (current != "Prescott" && current != "Core2" && current != "Nehalem") return;
  const char* better = native_coretype();
  if (better == nullptr) return;
  if (setenv("OPENBLAS_CORETYPE", better, 1) != 0) return;
  execv("/proc/self/exe", argv);
  unsetenv("OPENBLAS_CORETYPE");  // execv failed: go on with the kernels we have
}

}  // namespace pipescope::exec
