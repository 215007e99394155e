// OpenBLAS picks its compute kernels once, when the library is loaded, from the CPU's
// model number. Debian 12's OpenBLAS 0.3.21 does not know recent Xeons (this machine's
// model 207) and falls back to the Prescott kernels (SSE3): cblas_sgemm ran at
// 19 GFLOP/s on one core here, against 118 GFLOP/s with the SkylakeX (AVX-512) kernels.
// OPENBLAS_CORETYPE overrides the choice, but only before the library loads, so a
// program calls this first thing in main: when the fallback was taken on a CPU with
// AVX-512 (or AVX2), it sets OPENBLAS_CORETYPE and re-executes itself; otherwise
// (the right kernels, a user's own OPENBLAS_CORETYPE, another CPU) it returns at once.
//   int main(int argc, char** argv) { pipescope::exec::use_native_blas_kernels(argv); ... }
#pragma once

#include <string>

namespace pipescope::exec {

// Returns only when no re-execution is needed (or it failed: then the slow kernels stay).
void use_native_blas_kernels(char** argv);

// The kernel set OpenBLAS runs with, e.g. "SkylakeX", for notes and profiles.
std::string blas_kernels();

}  // namespace pipescope::exec
