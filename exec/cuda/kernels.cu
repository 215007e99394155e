// The CUDA backend's own kernels. Shapes of work: elementwise kernels use grid-stride
// loops; row kernels (LayerNorm, softmax) give one warp to one row and reduce with
// shuffles; column sums (bias and LayerNorm weight gradients) give 32 columns to a block
// of 32 x 8 threads and reduce the 8 partial sums in shared memory, so every result is
// deterministic (no atomics except the fp64 loss sum).
#include "exec/cuda/cuda_check.h"
#include "exec/cuda/kernels.h"

namespace pipescope::exec::cuda {

namespace {

constexpr int kThreads = 256;
constexpr float kGeluC = 0.7978845608028654f;  // sqrt(2 / pi)
constexpr float kGeluA = 0.044715f;
constexpr float kLayerNormEps = 1e-5f;

__device__ __forceinline__ float ld(const float* p) { return *p; }
__device__ __forceinline__ float ld(const bf16* p) { return __bfloat162float(*p); }
__device__ __forceinline__ void st(float* p, float v) { *p = v; }
__device__ __forceinline__ void st(bf16* p, float v) { *p = __float2bfloat16(v); }

__device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ float warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

int blocks_for(int64_t n) {
  int64_t b = (n + kThreads - 1) / kThreads;
  if (b < 1) b = 1;
  return static_cast<int>(b > 8192 ? 8192 : b);
}
int row_blocks(int rows) { return (rows + kThreads / 32 - 1) / (kThreads / 32); }

#define PS_GRID_STRIDE(i, n) \
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < (n); i += int64_t(gridDim.x) * blockDim.x)

template <class T> __global__ void fill_k(T* p, float v, int64_t n) { PS_GRID_STRIDE(i, n) st(p + i, v); }
template <class T> __global__ void from_float_k(T* d, const float* s, int64_t n) { PS_GRID_STRIDE(i, n) st(d + i, s[i]); }
template <class T> __global__ void to_float_k(float* d, const T* s, int64_t n) { PS_GRID_STRIDE(i, n) d[i] = ld(s + i); }

template <class T> __global__ void add_bias_k(T* y, const T* bias, int64_t rows, int cols) {
  PS_GRID_STRIDE(i, rows * cols) st(y + i, ld(y + i) + ld(bias + i % cols));
}

template <class T> __global__ void add_k(T* out, const T* a, const T* b, int64_t n) {
  PS_GRID_STRIDE(i, n) st(out + i, ld(a + i) + ld(b + i));
}

template <class T> __global__ void gelu_forward_k(T* y, const T* x, int64_t n) {
  PS_GRID_STRIDE(i, n) {
    float v = ld(x + i);
    st(y + i, 0.5f * v * (1.0f + tanhf(kGeluC * (v + kGeluA * v * v * v))));
  }
}

template <class T> __global__ void gelu_backward_k(T* dx, const T* x, const T* dy, int64_t n) {
  PS_GRID_STRIDE(i, n) {
    float v = ld(x + i);
    float t = tanhf(kGeluC * (v + kGeluA * v * v * v));
    float d = 0.5f * (1.0f + t) + 0.5f * v * (1.0f - t * t) * kGeluC * (1.0f + 3.0f * kGeluA * v * v);
    st(dx + i, ld(dy + i) * d);
  }
}

// Column sums over rows: block (32, 8) covers 32 columns.
template <class T> __global__ void sum_rows_k(T* out, const T* x, int rows, int cols) {
  __shared__ float part[8][33];
  const int c = blockIdx.x * 32 + threadIdx.x;
  float s = 0.0f;
  if (c < cols) {
    for (int r = threadIdx.y; r < rows; r += 8) s += ld(x + int64_t(r) * cols + c);
  }
  part[threadIdx.y][threadIdx.x] = s;
  __syncthreads();
  if (threadIdx.y == 0 && c < cols) {
    float total = 0.0f;
    for (int k = 0; k < 8; ++k) total += part[k][threadIdx.x];
    st(out + c, ld(out + c) + total);
  }
}

template <class T>
__global__ void layernorm_weight_k(T* dgamma, T* dbeta, const T* dy, const T* x, const T* mean, const T* rstd,
                                   int rows, int cols) {
  __shared__ float pg[8][33], pb[8][33];
  const int c = blockIdx.x * 32 + threadIdx.x;
  float sg = 0.0f, sb = 0.0f;
  if (c < cols) {
    for (int r = threadIdx.y; r < rows; r += 8) {
      const int64_t o = int64_t(r) * cols + c;
      const float g = ld(dy + o);
      sg += g * (ld(x + o) - ld(mean + r)) * ld(rstd + r);
      sb += g;
    }
  }
  pg[threadIdx.y][threadIdx.x] = sg;
  pb[threadIdx.y][threadIdx.x] = sb;
  __syncthreads();
  if (threadIdx.y == 0 && c < cols) {
    float tg = 0.0f, tb = 0.0f;
    for (int k = 0; k < 8; ++k) {
      tg += pg[k][threadIdx.x];
      tb += pb[k][threadIdx.x];
    }
    st(dgamma + c, ld(dgamma + c) + tg);
    st(dbeta + c, ld(dbeta + c) + tb);
  }
}

template <class T>
__global__ void layernorm_forward_k(T* y, T* mean, T* rstd, const T* x, const T* gamma, const T* beta, int rows,
                                    int cols) {
  const int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x % 32;
  if (row >= rows) return;
  const T* xr = x + int64_t(row) * cols;
  T* yr = y + int64_t(row) * cols;
  float s = 0.0f;
  for (int j = lane; j < cols; j += 32) s += ld(xr + j);
  const float mu = warp_sum(s) / cols;
  float v = 0.0f;
  for (int j = lane; j < cols; j += 32) {
    const float d = ld(xr + j) - mu;
    v += d * d;
  }
  const float rs = rsqrtf(warp_sum(v) / cols + kLayerNormEps);
  for (int j = lane; j < cols; j += 32) st(yr + j, (ld(xr + j) - mu) * rs * ld(gamma + j) + ld(beta + j));
  if (lane == 0) {
    st(mean + row, mu);
    st(rstd + row, rs);
  }
}

template <class T>
__global__ void layernorm_backward_input_k(T* dx, const T* dy, const T* x, const T* mean, const T* rstd,
                                           const T* gamma, int rows, int cols) {
  const int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x % 32;
  if (row >= rows) return;
  const int64_t o = int64_t(row) * cols;
  const float mu = ld(mean + row), rs = ld(rstd + row);
  float sg = 0.0f, sgx = 0.0f;
  for (int j = lane; j < cols; j += 32) {
    const float xhat = (ld(x + o + j) - mu) * rs, g = ld(dy + o + j) * ld(gamma + j);
    sg += g;
    sgx += g * xhat;
  }
  const float mean_g = warp_sum(sg) / cols, mean_gx = warp_sum(sgx) / cols;
  for (int j = lane; j < cols; j += 32) {
    const float xhat = (ld(x + o + j) - mu) * rs, g = ld(dy + o + j) * ld(gamma + j);
    st(dx + o + j, rs * (g - mean_g - xhat * mean_gx));
  }
}

// In place allowed (p == scores): each lane writes only the elements it read last.
template <class T> __global__ void softmax_forward_k(T* p, const T* scores, int rows, int seq) {
  const int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x % 32;
  if (row >= rows) return;
  const int t = row % seq;
  const T* s = scores + int64_t(row) * seq;
  T* pr = p + int64_t(row) * seq;
  float mx = -INFINITY;
  for (int j = lane; j <= t; j += 32) mx = fmaxf(mx, ld(s + j));
  mx = warp_max(mx);
  float sum = 0.0f;
  for (int j = lane; j <= t; j += 32) sum += expf(ld(s + j) - mx);
  const float inv = 1.0f / warp_sum(sum);
  for (int j = lane; j < seq; j += 32) st(pr + j, j <= t ? expf(ld(s + j) - mx) * inv : 0.0f);
}

template <class T> __global__ void softmax_backward_k(T* ds, const T* p, const T* dp, int rows, int seq) {
  const int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x % 32;
  if (row >= rows) return;
  const int t = row % seq;
  const int64_t o = int64_t(row) * seq;
  float dot = 0.0f;
  for (int j = lane; j <= t; j += 32) dot += ld(p + o + j) * ld(dp + o + j);
  dot = warp_sum(dot);
  for (int j = lane; j < seq; j += 32) st(ds + o + j, j <= t ? ld(p + o + j) * (ld(dp + o + j) - dot) : 0.0f);
}

template <class T>
__global__ void mse_k(T* dy, const T* y, const T* target, float scale, int64_t n, double* loss) {
  double local = 0.0;
  PS_GRID_STRIDE(i, n) {
    const float d = ld(y + i) - ld(target + i);
    local += double(d) * d;
    st(dy + i, scale * d);
  }
  for (int o = 16; o > 0; o >>= 1) local += __shfl_xor_sync(0xffffffffu, local, o);
  __shared__ double warp_part[kThreads / 32];
  if (threadIdx.x % 32 == 0) warp_part[threadIdx.x / 32] = local;
  __syncthreads();
  if (threadIdx.x == 0) {
    double total = 0.0;
    for (int w = 0; w < kThreads / 32; ++w) total += warp_part[w];
    atomicAdd(loss, total);
  }
}

template <class T> __global__ void sgd_k(T* w, const T* g, float lr, int64_t n) {
  PS_GRID_STRIDE(i, n) st(w + i, ld(w + i) - lr * ld(g + i));
}

template <class T>
__global__ void adam_k(T* w, const T* g, T* m, T* v, float lr, float b1, float b2, float eps, float c1, float c2,
                       int64_t n) {
  PS_GRID_STRIDE(i, n) {
    const float gi = ld(g + i);
    const float mi = b1 * ld(m + i) + (1.0f - b1) * gi;
    const float vi = b2 * ld(v + i) + (1.0f - b2) * gi * gi;
    st(m + i, mi);
    st(v + i, vi);
    st(w + i, ld(w + i) - lr * (mi / c1) / (sqrtf(vi / c2) + eps));
  }
}

}  // namespace

template <class T> void fill(cudaStream_t s, T* p, float v, int64_t n) {
  if (n <= 0) return;
  fill_k<<<blocks_for(n), kThreads, 0, s>>>(p, v, n);
  PS_CUDA_CHECK_LAUNCH();
}
template <class T> void from_float(cudaStream_t s, T* dst, const float* src, int64_t n) {
  if (n <= 0) return;
  from_float_k<<<blocks_for(n), kThreads, 0, s>>>(dst, src, n);
  PS_CUDA_CHECK_LAUNCH();
}
template <class T> void to_float(cudaStream_t s, float* dst, const T* src, int64_t n) {
  if (n <= 0) return;
  to_float_k<<<blocks_for(n), kThreads, 0, s>>>(dst, src, n);
  PS_CUDA_CHECK_LAUNCH();
}
template <class T> void add_bias(cudaStream_t s, T* y, const T* bias, int rows, int cols) {
  const int64_t n = int64_t(rows) * cols;
  if (n <= 0) return;
  add_bias_k<<<blocks_for(n), kThreads, 0, s>>>(y, bias, rows, cols);
  PS_CUDA_CHECK_LAUNCH();
}
template <class T> void sum_rows_accumulate(cudaStream_t s, T* out, const T* x, int rows, int cols) {
  if (rows <= 0 || cols <= 0) return;
  sum_rows_k<<<(cols + 31) / 32, dim3(32, 8), 0, s>>>(out, x, rows, cols);
  PS_CUDA_CHECK_LAUNCH();
}
template <class T> void add(cudaStream_t s, T* out, const T* a, const T* b, int64_t n) {
  if (n <= 0) return;
  add_k<<<blocks_for(n), kThreads, 0, s>>>(out, a, b, n);
  PS_CUDA_CHECK_LAUNCH();
}
template <class T> void gelu_forward(cudaStream_t s, T* y, const T* x, int64_t n) {
  if (n <= 0) return;
  gelu_forward_k<<<blocks_for(n), kThreads, 0, s>>>(y, x, n);
  PS_CUDA_CHECK_LAUNCH();
}
template <class T> void gelu_backward(cudaStream_t s, T* dx, const T* x, const T* dy, int64_t n) {
  if (n <= 0) return;
  gelu_backward_k<<<blocks_for(n), kThreads, 0, s>>>(dx, x, dy, n);
  PS_CUDA_CHECK_LAUNCH();
}
template <class T>
void layernorm_forward(cudaStream_t s, T* y, T* mean, T* rstd, const T* x, const T* gamma, const T* beta,
                       int rows, int cols) {
  if (rows <= 0) return;
  layernorm_forward_k<<<row_blocks(rows), kThreads, 0, s>>>(y, mean, rstd, x, gamma, beta, rows, cols);
  PS_CUDA_CHECK_LAUNCH();
}
template <class T>
void layernorm_backward_input(cudaStream_t s, T* dx, const T* dy, const T* x, const T* mean, const T* rstd,
                              const T* gamma, int rows, int cols) {
  if (rows <= 0) return;
  layernorm_backward_input_k<<<row_blocks(rows), kThreads, 0, s>>>(dx, dy, x, mean, rstd, gamma, rows, cols);
  PS_CUDA_CHECK_LAUNCH();
}
template <class T>
void layernorm_backward_weight_accumulate(cudaStream_t s, T* dgamma, T* dbeta, const T* dy, const T* x,
                                          const T* mean, const T* rstd, int rows, int cols) {
  if (rows <= 0 || cols <= 0) return;
  layernorm_weight_k<<<(cols + 31) / 32, dim3(32, 8), 0, s>>>(dgamma, dbeta, dy, x, mean, rstd, rows, cols);
  PS_CUDA_CHECK_LAUNCH();
}
template <class T> void causal_softmax_forward(cudaStream_t s, T* p, const T* scores, int rows, int seq) {
  if (rows <= 0) return;
  softmax_forward_k<<<row_blocks(rows), kThreads, 0, s>>>(p, scores, rows, seq);
  PS_CUDA_CHECK_LAUNCH();
}
template <class T>
void causal_softmax_backward(cudaStream_t s, T* dscores, const T* p, const T* dp, int rows, int seq) {
  if (rows <= 0) return;
  softmax_backward_k<<<row_blocks(rows), kThreads, 0, s>>>(dscores, p, dp, rows, seq);
  PS_CUDA_CHECK_LAUNCH();
}
template <class T>
void mse_gradient(cudaStream_t s, T* dy, const T* y, const T* target, float scale, int64_t n, double* loss) {
  if (n <= 0) return;
  mse_k<<<blocks_for(n), kThreads, 0, s>>>(dy, y, target, scale, n, loss);
  PS_CUDA_CHECK_LAUNCH();
}
template <class T> void sgd_step(cudaStream_t s, T* w, const T* g, float lr, int64_t n) {
  if (n <= 0) return;
  sgd_k<<<blocks_for(n), kThreads, 0, s>>>(w, g, lr, n);
  PS_CUDA_CHECK_LAUNCH();
}
template <class T>
void adam_step(cudaStream_t s, T* w, const T* g, T* m, T* v, float lr, float beta1, float beta2, float eps,
               float c1, float c2, int64_t n) {
  if (n <= 0) return;
  adam_k<<<blocks_for(n), kThreads, 0, s>>>(w, g, m, v, lr, beta1, beta2, eps, c1, c2, n);
  PS_CUDA_CHECK_LAUNCH();
}

#define PS_INSTANTIATE(T)                                                                                     \
  template void fill<T>(cudaStream_t, T*, float, int64_t);                                                    \
  template void from_float<T>(cudaStream_t, T*, const float*, int64_t);                                       \
  template void to_float<T>(cudaStream_t, float*, const T*, int64_t);                                         \
  template void add_bias<T>(cudaStream_t, T*, const T*, int, int);                                            \
  template void sum_rows_accumulate<T>(cudaStream_t, T*, const T*, int, int);                                 \
  template void add<T>(cudaStream_t, T*, const T*, const T*, int64_t);                                        \
  template void gelu_forward<T>(cudaStream_t, T*, const T*, int64_t);                                         \
  template void gelu_backward<T>(cudaStream_t, T*, const T*, const T*, int64_t);                              \
  template void layernorm_forward<T>(cudaStream_t, T*, T*, T*, const T*, const T*, const T*, int, int);       \
  template void layernorm_backward_input<T>(cudaStream_t, T*, const T*, const T*, const T*, const T*,         \
                                            const T*, int, int);                                              \
  template void layernorm_backward_weight_accumulate<T>(cudaStream_t, T*, T*, const T*, const T*, const T*,   \
                                                        const T*, int, int);                                  \
  template void causal_softmax_forward<T>(cudaStream_t, T*, const T*, int, int);                              \
  template void causal_softmax_backward<T>(cudaStream_t, T*, const T*, const T*, int, int);                   \
  template void mse_gradient<T>(cudaStream_t, T*, const T*, const T*, float, int64_t, double*);               \
  template void sgd_step<T>(cudaStream_t, T*, const T*, float, int64_t);                                      \
  template void adam_step<T>(cudaStream_t, T*, const T*, T*, T*, float, float, float, float, float, float,    \
                             int64_t);

PS_INSTANTIATE(float)
PS_INSTANTIATE(bf16)

}  // namespace pipescope::exec::cuda
