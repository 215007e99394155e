// measure_cuda_gemm: how close the backend's GEMM gets to the best cuBLAS can do for one
// shape. Both sides see the same buffers; every algorithm is timed the same way (events
// around `repeats` back-to-back launches after a warm-up), so the ratio is fair.
#include <cublasLt.h>

#include <algorithm>
#include <vector>

#include "exec/cuda/cuda_api.h"
#include "exec/cuda/cuda_backend.h"
#include "exec/cuda/cuda_check.h"

namespace pipescope::exec {

namespace {

// RAII for the cuBLASLt objects of one measurement.
struct LtObjects {
  cublasLtHandle_t lt = nullptr;
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  ~LtObjects() {
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
    if (c) cublasLtMatrixLayoutDestroy(c);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (op) cublasLtMatmulDescDestroy(op);
    if (lt) cublasLtDestroy(lt);
  }
};

}  // namespace

GemmMeasurement measure_cuda_gemm(int m, int n, int k, Dtype dtype, int repeats) {
  if (m < 1 || n < 1 || k < 1 || repeats < 1) throw InputError("gemm: m, n, k and repeats must be positive");
  if (dtype != Dtype::Fp32 && dtype != Dtype::Bf16) {
    throw InputError("gemm: the CUDA backend runs fp32 or bf16, not " + to_string(dtype));
  }
  const bool bf16 = dtype == Dtype::Bf16;
  auto backend = make_cuda_backend(bf16 ? "cuda:bf16" : "cuda", 0, 1);
  auto& be = dynamic_cast<cuda::CudaBackend&>(*backend);
  float* a = be.allocate(int64_t(m) * k);
  float* b = be.allocate(int64_t(k) * n);
  float* c = be.allocate(int64_t(m) * n);
  be.fill(a, 0.01f, int64_t(m) * k);
  be.fill(b, 0.02f, int64_t(k) * n);
  const double flop = 2.0 * m * n * k;
  auto time_ms = [&](auto&& launch) {
    for (int i = 0; i < 3; ++i) launch();
    const int64_t t0 = be.now_ns();
    for (int i = 0; i < repeats; ++i) launch();
    return (be.now_ns() - t0) / 1e6 / repeats;
  };
  GemmMeasurement r;
  r.m = m, r.n = n, r.k = k, r.dtype = dtype;
  r.backend_ms = time_ms([&] { be.gemm(false, false, m, n, k, 1.0f, a, k, b, n, 0.0f, c, n); });

  // cuBLASLt: row-major C = A B is column-major C^T = B^T A^T.
  const cudaDataType_t t = bf16 ? CUDA_R_16BF : CUDA_R_32F;
  LtObjects lt;
  PS_CUBLAS_CHECK(cublasLtCreate(&lt.lt));
  PS_CUBLAS_CHECK(cublasLtMatmulDescCreate(&lt.op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  PS_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&lt.a, t, n, k, n));  // B^T
  PS_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&lt.b, t, k, m, k));  // A^T
  PS_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&lt.c, t, n, m, n));
  std::size_t workspace_bytes = 64u << 20;
  void* workspace = be.allocator().allocate(workspace_bytes);
  PS_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&lt.pref));
  PS_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(lt.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                       &workspace_bytes, sizeof(workspace_bytes)));
  std::vector<cublasLtMatmulHeuristicResult_t> heuristics(32);
  int found = 0;
  PS_CUBLAS_CHECK(cublasLtMatmulAlgoGetHeuristic(lt.lt, lt.op, lt.a, lt.b, lt.c, lt.c, lt.pref,
                                                 static_cast<int>(heuristics.size()), heuristics.data(), &found));
  const float alpha = 1.0f, beta = 0.0f;
  void* da = be.device_address(a);
  void* db = be.device_address(b);
  void* dc = be.device_address(c);
  r.best_ms = r.backend_ms;
  for (int i = 0; i < found; ++i) {
    if (heuristics[i].state != CUBLAS_STATUS_SUCCESS) continue;
    const double ms = time_ms([&] {
      PS_CUBLAS_CHECK(cublasLtMatmul(lt.lt, lt.op, &alpha, db, lt.a, da, lt.b, &beta, dc, lt.c, dc, lt.c,
                                     &heuristics[i].algo, workspace, workspace_bytes, be.stream()));
    });
    r.best_ms = std::min(r.best_ms, ms);
    ++r.algorithms;
  }
  be.allocator().free(workspace);
  be.deallocate(a, 0);
  be.deallocate(b, 0);
  be.deallocate(c, 0);
  r.backend_tflops = flop / (r.backend_ms * 1e-3) / 1e12;
  r.best_tflops = flop / (r.best_ms * 1e-3) / 1e12;
  r.fraction = r.backend_tflops / r.best_tflops;
  return r;
}

}  // namespace pipescope::exec
