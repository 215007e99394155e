// CPU kernels. Invariant: every kernel reads and writes only the ranges its
// arguments name; gemm goes through cblas_sgemm, nothing here multiplies matrices by hand.
#include "exec/backends/cpu_backend.h"

#include <cblas.h>

#include <Eigen/Core>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>

namespace pipescope::exec {

CpuBackend::CpuBackend() {
  // One BLAS thread: each stage worker is one thread (or one MPI rank) on its own core.
  openblas_set_num_threads(1);
}

float* CpuBackend::allocate(int64_t floats) {
  if (floats <= 0) return nullptr;
  std::size_t bytes = (static_cast<std::size_t>(floats) * sizeof(float) + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, bytes);
  if (!p) throw std::bad_alloc();
  return static_cast<float*>(p);
}

void CpuBackend::deallocate(float* p, int64_t) { std::free(p); }

void CpuBackend::upload(float* dst, const float* host, int64_t n) { copy(dst, host, n); }
void CpuBackend::download(float* host, const float* src, int64_t n) { copy(host, src, n); }
void CpuBackend::copy(float* dst, const float* src, int64_t n) {
  if (n > 0) std::memcpy(dst, src, static_cast<std::size_t>(n) * sizeof(float));
}
void CpuBackend::fill(float* dst, float value, int64_t n) { std::fill(dst, dst + n, value); }

void CpuBackend::gemm(bool ta, bool tb, int m, int n, int k, float alpha, const float* a, int lda,
                      const float* b, int ldb, float beta, float* c, int ldc) {
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n,
              k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void CpuBackend::gemm_batched(bool ta, bool tb, int m, int n, int k, float alpha, const float* a,
                              int lda, int64_t stride_a, const float* b, int ldb, int64_t stride_b,
                              float beta, float* c, int ldc, int64_t stride_c, int batch) {
  for (int i = 0; i < batch; ++i) {
    gemm(ta, tb, m, n, k, alpha, a + i * stride_a, lda, b + i * stride_b, ldb, beta,
         c + i * stride_c, ldc);
  }
}

void CpuBackend::add_bias(float* y, const float* bias, int rows, int cols) {
  for (int r = 0; r < rows; ++r) {
    float* row = y + static_cast<int64_t>(r) * cols;
    for (int j = 0; j < cols; ++j) row[j] += bias[j];
  }
}

void CpuBackend::sum_rows_accumulate(float* out, const float* x, int rows, int cols) {
  for (int r = 0; r < rows; ++r) {
    const float* row = x + static_cast<int64_t>(r) * cols;
    for (int j = 0; j < cols; ++j) out[j] += row[j];
  }
}

void CpuBackend::add(float* out, const float* a, const float* b, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

namespace {
constexpr float kGeluC = 0.7978845608028654f;  // sqrt(2 / pi)
constexpr float kGeluA = 0.044715f;
}  // namespace

// GELU goes through Eigen's vectorised tanh: with libm's scalar tanhf the two GELU
// kernels took 45% of a gpt-tiny step (perf, after the BLAS kernels were fixed).
void CpuBackend::gelu_forward(float* y, const float* x, int64_t n) {
  Eigen::Map<const Eigen::ArrayXf> v(x, n);
  Eigen::Map<Eigen::ArrayXf> out(y, n);
  out = 0.5f * v * (1.0f + (kGeluC * (v + kGeluA * v.cube())).tanh());
}

void CpuBackend::gelu_backward(float* dx, const float* x, const float* dy, int64_t n) {
  constexpr int64_t kBlock = 1024;  // tanh kept on the stack, one block at a time
  Eigen::Array<float, Eigen::Dynamic, 1, 0, kBlock, 1> t;
  for (int64_t i = 0; i < n; i += kBlock) {
    const int64_t len = std::min(kBlock, n - i);
    Eigen::Map<const Eigen::ArrayXf> v(x + i, len), g(dy + i, len);
    Eigen::Map<Eigen::ArrayXf> out(dx + i, len);
    t = (kGeluC * (v + kGeluA * v.cube())).tanh();
    out = g * (0.5f * (1.0f + t) + 0.5f * v * (1.0f - t.square()) * kGeluC * (1.0f + 3.0f * kGeluA * v.square()));
  }
}

void CpuBackend::layernorm_forward(float* y, float* mean, float* rstd, const float* x,
                                   const float* gamma, const float* beta, int rows, int cols) {
  constexpr float kEps = 1e-5f;
  for (int r = 0; r < rows; ++r) {
    const float* xr = x + static_cast<int64_t>(r) * cols;
    float* yr = y + static_cast<int64_t>(r) * cols;
    double s = 0;
    for (int j = 0; j < cols; ++j) s += xr[j];
    float mu = static_cast<float>(s / cols);
    double v = 0;
    for (int j = 0; j < cols; ++j) v += double(xr[j] - mu) * (xr[j] - mu);
    float rs = 1.0f / std::sqrt(static_cast<float>(v / cols) + kEps);
    for (int j = 0; j < cols; ++j) yr[j] = (xr[j] - mu) * rs * gamma[j] + beta[j];
    mean[r] = mu;
    rstd[r] = rs;
  }
}

void CpuBackend::layernorm_backward_input(float* dx, const float* dy, const float* x,
                                          const float* mean, const float* rstd, const float* gamma,
                                          int rows, int cols) {
  for (int r = 0; r < rows; ++r) {
    const int64_t o = static_cast<int64_t>(r) * cols;
    double mean_g = 0, mean_gx = 0;
    for (int j = 0; j < cols; ++j) {
      float xhat = (x[o + j] - mean[r]) * rstd[r];
      float g = dy[o + j] * gamma[j];
      mean_g += g;
      mean_gx += double(g) * xhat;
    }
    mean_g /= cols;
    mean_gx /= cols;
    for (int j = 0; j < cols; ++j) {
      float xhat = (x[o + j] - mean[r]) * rstd[r];
      float g = dy[o + j] * gamma[j];
      dx[o + j] = rstd[r] * (g - static_cast<float>(mean_g) - xhat * static_cast<float>(mean_gx));
    }
  }
}

void CpuBackend::layernorm_backward_weight_accumulate(float* dgamma, float* dbeta, const float* dy,
                                                      const float* x, const float* mean,
                                                      const float* rstd, int rows, int cols) {
  for (int r = 0; r < rows; ++r) {
    const int64_t o = static_cast<int64_t>(r) * cols;
    for (int j = 0; j < cols; ++j) {
      float xhat = (x[o + j] - mean[r]) * rstd[r];
      dgamma[j] += dy[o + j] * xhat;
      dbeta[j] += dy[o + j];
    }
  }
}

void CpuBackend::causal_softmax_forward(float* p, const float* scores, int rows, int seq) {
  for (int r = 0; r < rows; ++r) {
    const int t = r % seq;
    const float* s = scores + static_cast<int64_t>(r) * seq;
    float* pr = p + static_cast<int64_t>(r) * seq;
    float mx = s[0];
    for (int j = 1; j <= t; ++j) mx = std::max(mx, s[j]);
    float sum = 0;
    for (int j = 0; j <= t; ++j) {
      pr[j] = std::exp(s[j] - mx);
      sum += pr[j];
    }
    const float inv = 1.0f / sum;
    for (int j = 0; j <= t; ++j) pr[j] *= inv;
    for (int j = t + 1; j < seq; ++j) pr[j] = 0.0f;
  }
}

void CpuBackend::causal_softmax_backward(float* dscores, const float* p, const float* dp, int rows,
                                         int seq) {
  for (int r = 0; r < rows; ++r) {
    const int t = r % seq;
    const int64_t o = static_cast<int64_t>(r) * seq;
    float dot = 0;
    for (int j = 0; j <= t; ++j) dot += p[o + j] * dp[o + j];
    for (int j = 0; j <= t; ++j) dscores[o + j] = p[o + j] * (dp[o + j] - dot);
    for (int j = t + 1; j < seq; ++j) dscores[o + j] = 0.0f;
  }
}

double CpuBackend::mse_gradient(float* dy, const float* y, const float* target, float scale,
                                int64_t n) {
  double loss = 0;
  for (int64_t i = 0; i < n; ++i) {
    float d = y[i] - target[i];
    loss += double(d) * d;
    dy[i] = scale * d;
  }
  return loss;
}

void CpuBackend::sgd_step(float* w, const float* g, float lr, int64_t n) {
  for (int64_t i = 0; i < n; ++i) w[i] -= lr * g[i];
}

void CpuBackend::adam_step(float* w, const float* g, float* m, float* v, const AdamSettings& s,
                           int step, int64_t n) {
  const float c1 = 1.0f - std::pow(s.beta1, static_cast<float>(step));
  const float c2 = 1.0f - std::pow(s.beta2, static_cast<float>(step));
  for (int64_t i = 0; i < n; ++i) {
    m[i] = s.beta1 * m[i] + (1.0f - s.beta1) * g[i];
    v[i] = s.beta2 * v[i] + (1.0f - s.beta2) * g[i] * g[i];
    w[i] -= s.lr * (m[i] / c1) / (std::sqrt(v[i] / c2) + s.eps);
  }
}

int64_t CpuBackend::now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace pipescope::exec
