// Launchers of the CUDA backend's own kernels (bias, GELU, LayerNorm, causal softmax,
// reductions, optimizers, conversions), for T = float or __nv_bfloat16. Every kernel
// loads T, computes in fp32 and stores T; reductions accumulate in fp32 (the MSE loss in
// fp64). Each launcher checks its launch. Semantics are exactly those of the CPU
// reference (exec/backends/cpu_backend.cpp), including in-place softmax (p may equal scores).
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace pipescope::exec::cuda {

using bf16 = __nv_bfloat16;

template <class T> void fill(cudaStream_t s, T* p, float v, int64_t n);
template <class T> void from_float(cudaStream_t s, T* dst, const float* src, int64_t n);
template <class T> void to_float(cudaStream_t s, float* dst, const T* src, int64_t n);
template <class T> void add_bias(cudaStream_t s, T* y, const T* bias, int rows, int cols);
template <class T> void sum_rows_accumulate(cudaStream_t s, T* out, const T* x, int rows, int cols);
template <class T> void add(cudaStream_t s, T* out, const T* a, const T* b, int64_t n);
template <class T> void gelu_forward(cudaStream_t s, T* y, const T* x, int64_t n);
template <class T> void gelu_backward(cudaStream_t s, T* dx, const T* x, const T* dy, int64_t n);
template <class T>
void layernorm_forward(cudaStream_t s, T* y, T* mean, T* rstd, const T* x, const T* gamma, const T* beta,
                       int rows, int cols);
template <class T>
void layernorm_backward_input(cudaStream_t s, T* dx, const T* dy, const T* x, const T* mean, const T* rstd,
                              const T* gamma, int rows, int cols);
template <class T>
void layernorm_backward_weight_accumulate(cudaStream_t s, T* dgamma, T* dbeta, const T* dy, const T* x,
                                          const T* mean, const T* rstd, int rows, int cols);
template <class T> void causal_softmax_forward(cudaStream_t s, T* p, const T* scores, int rows, int seq);
template <class T>
void causal_softmax_backward(cudaStream_t s, T* dscores, const T* p, const T* dp, int rows, int seq);
// dy = scale (y - target); adds sum((y - target)^2) to *loss (device fp64).
template <class T>
void mse_gradient(cudaStream_t s, T* dy, const T* y, const T* target, float scale, int64_t n, double* loss);
template <class T> void sgd_step(cudaStream_t s, T* w, const T* g, float lr, int64_t n);
template <class T>
void adam_step(cudaStream_t s, T* w, const T* g, T* m, T* v, float lr, float beta1, float beta2, float eps,
               float c1, float c2, int64_t n);

}  // namespace pipescope::exec::cuda
