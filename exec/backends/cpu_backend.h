// The CPU backend: fp32, matrix products through OpenBLAS (cblas_sgemm, one BLAS thread
// per worker so that K stage workers do not fight over cores), other kernels as plain
// loops over contiguous memory. It is the reference every other backend is checked
// against.
#pragma once

#include "exec/backends/backend.h"

namespace pipescope::exec {

class CpuBackend : public Backend {
 public:
  CpuBackend();
  std::string name() const override { return "cpu"; }
  float* allocate(int64_t floats) override;
  void deallocate(float* p, int64_t floats) override;
  void upload(float* dst, const float* host, int64_t n) override;
  void download(float* host, const float* src, int64_t n) override;
  void copy(float* dst, const float* src, int64_t n) override;
  void fill(float* dst, float value, int64_t n) override;
  void gemm(bool ta, bool tb, int m, int n, int k, float alpha, const float* a, int lda,
            const float* b, int ldb, float beta, float* c, int ldc) override;
  void gemm_batched(bool ta, bool tb, int m, int n, int k, float alpha, const float* a, int lda,
                    int64_t stride_a, const float* b, int ldb, int64_t stride_b, float beta,
                    float* c, int ldc, int64_t stride_c, int batch) override;
  void add_bias(float* y, const float* bias, int rows, int cols) override;
  void sum_rows_accumulate(float* out, const float* x, int rows, int cols) override;
  void add(float* out, const float* a, const float* b, int64_t n) override;
  void gelu_forward(float* y, const float* x, int64_t n) override;
  void gelu_backward(float* dx, const float* x, const float* dy, int64_t n) override;
  void layernorm_forward(float* y, float* mean, float* rstd, const float* x, const float* gamma,
                         const float* beta, int rows, int cols) override;
  void layernorm_backward_input(float* dx, const float* dy, const float* x, const float* mean,
                                const float* rstd, const float* gamma, int rows, int cols) override;
  void layernorm_backward_weight_accumulate(float* dgamma, float* dbeta, const float* dy,
                                            const float* x, const float* mean, const float* rstd,
                                            int rows, int cols) override;
  void causal_softmax_forward(float* p, const float* scores, int rows, int seq) override;
  void causal_softmax_backward(float* dscores, const float* p, const float* dp, int rows,
                               int seq) override;
  double mse_gradient(float* dy, const float* y, const float* target, float scale,
                      int64_t n) override;
  void sgd_step(float* w, const float* g, float lr, int64_t n) override;
  void adam_step(float* w, const float* g, float* m, float* v, const AdamSettings& s, int step,
                 int64_t n) override;
  int64_t now_ns() override;
};

}  // namespace pipescope::exec
