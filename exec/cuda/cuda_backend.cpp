// CudaBackend: row-major products through column-major cuBLAS (C^T = op(B)^T op(A)^T),
// the rest through kernels.h. Invariant: every CUDA and cuBLAS call is checked; work is
// only queued on stream_, except where a host value is needed (download, mse_gradient,
// now_ns), which waits for the stream.
#include "exec/cuda/cuda_backend.h"

#include <chrono>
#include <cmath>
#include <cstdint>
#include <vector>

#include "exec/cuda/cuda_check.h"
#include "exec/cuda/kernels.h"

namespace pipescope::exec::cuda {

namespace {

template <class T> struct Tag { using type = T; };

template <class T> T* dev(const float* handle) {
  if constexpr (std::is_same_v<T, float>) {
    return const_cast<float*>(handle);
  } else {
    return reinterpret_cast<T*>(reinterpret_cast<std::uintptr_t>(handle) / 2);
  }
}

template <class T> cudaDataType_t data_type() { return std::is_same_v<T, float> ? CUDA_R_32F : CUDA_R_16BF; }

cublasOperation_t op(bool t) { return t ? CUBLAS_OP_T : CUBLAS_OP_N; }

int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

template <class F> void CudaBackend::dispatch(F&& f) {
  if (bf16_) {
    f(Tag<bf16>{});
  } else {
    f(Tag<float>{});
  }
}

CudaBackend::CudaBackend(const CudaBackendSpec& spec, int gpu, int part, int parts)
    : bf16_(spec.dtype == Dtype::Bf16), gpu_(gpu) {
  PS_CUDA_CHECK(cudaSetDevice(gpu));
  if (parts > 1) {
    partition_ = std::make_unique<GreenPartition>(gpu, part, parts);
    partition_->make_current();
  }
  cudaDeviceProp prop{};
  PS_CUDA_CHECK(cudaGetDeviceProperties(&prop, gpu));
  device_name_ = prop.name;
  if (partition_) device_name_ += " (" + partition_->describe() + ")";
  device_memory_ = static_cast<int64_t>(prop.totalGlobalMem);
  allocator_ = std::make_shared<CachingAllocator>(gpu);
  PS_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  PS_CUBLAS_CHECK(cublasCreate(&blas_));
  PS_CUBLAS_CHECK(cublasSetStream(blas_, stream_));
  PS_CUBLAS_CHECK(cublasSetMathMode(blas_, CUBLAS_DEFAULT_MATH));  // fp32 stays fp32: no TF32
  workspace_ = allocator_->allocate(workspace_bytes_);
  PS_CUBLAS_CHECK(cublasSetWorkspace(blas_, workspace_, workspace_bytes_));
  loss_device_ = static_cast<double*>(allocator_->allocate(sizeof(double)));
  PS_CUDA_CHECK(cudaMallocHost(&loss_host_, sizeof(double)));
  int l2 = 0;
  PS_CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, gpu));
  flush_bytes_ = static_cast<std::size_t>(l2) * 2;
  PS_CUDA_CHECK(cudaEventCreate(&ref_event_));
  PS_CUDA_CHECK(cudaEventCreate(&now_event_));
  PS_CUDA_CHECK(cudaEventRecord(ref_event_, stream_));
  PS_CUDA_CHECK(cudaEventSynchronize(ref_event_));
  ref_host_ns_ = steady_ns();
}

CudaBackend::~CudaBackend() {
  // No throwing here: a failed device leaves nothing to clean up that matters.
  if (stream_) cudaStreamSynchronize(stream_);
  if (blas_) cublasDestroy(blas_);
  if (ref_event_) cudaEventDestroy(ref_event_);
  if (now_event_) cudaEventDestroy(now_event_);
  if (loss_host_) cudaFreeHost(loss_host_);
  if (allocator_) {
    // Our own blocks go back now; staging blocks still in flight keep the allocator alive.
    try {
      allocator_->free(workspace_);
      allocator_->free(loss_device_);
      if (flush_buffer_) allocator_->free(flush_buffer_);
    } catch (const std::exception&) {
    }
    allocator_.reset();
  }
  if (stream_) cudaStreamDestroy(stream_);
}

void* CudaBackend::device_address(const float* handle) const {
  return bf16_ ? static_cast<void*>(dev<bf16>(handle)) : static_cast<void*>(dev<float>(handle));
}

float* CudaBackend::allocate(int64_t floats) {
  if (floats <= 0) return nullptr;
  void* p = allocator_->allocate(static_cast<std::size_t>(floats * element_bytes()));
  if (!bf16_) return static_cast<float*>(p);
  return reinterpret_cast<float*>(reinterpret_cast<std::uintptr_t>(p) * 2);
}

void CudaBackend::deallocate(float* p, int64_t) {
  if (p) allocator_->free(device_address(p));
}

void CudaBackend::upload(float* dst, const float* host, int64_t n) {
  if (n <= 0) return;
  const std::size_t bytes = static_cast<std::size_t>(n) * sizeof(float);
  if (!bf16_) {
    PS_CUDA_CHECK(cudaMemcpyAsync(dst, host, bytes, cudaMemcpyHostToDevice, stream_));
  } else {
    float* staging = static_cast<float*>(allocator_->allocate(bytes));
    PS_CUDA_CHECK(cudaMemcpyAsync(staging, host, bytes, cudaMemcpyHostToDevice, stream_));
    from_float<bf16>(stream_, dev<bf16>(dst), staging, n);
    allocator_->free(staging);  // stream-ordered: the next user queues behind the conversion
  }
  PS_CUDA_CHECK(cudaStreamSynchronize(stream_));  // the host vector may go away after return
}

void CudaBackend::download(float* host, const float* src, int64_t n) {
  if (n <= 0) return;
  const std::size_t bytes = static_cast<std::size_t>(n) * sizeof(float);
  if (!bf16_) {
    PS_CUDA_CHECK(cudaMemcpyAsync(host, src, bytes, cudaMemcpyDeviceToHost, stream_));
  } else {
    float* staging = static_cast<float*>(allocator_->allocate(bytes));
    to_float<bf16>(stream_, staging, dev<bf16>(src), n);
    PS_CUDA_CHECK(cudaMemcpyAsync(host, staging, bytes, cudaMemcpyDeviceToHost, stream_));
    allocator_->free(staging);
  }
  PS_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

void CudaBackend::copy(float* dst, const float* src, int64_t n) {
  if (n <= 0) return;
  PS_CUDA_CHECK(cudaMemcpyAsync(device_address(dst), device_address(src),
                                static_cast<std::size_t>(n * element_bytes()), cudaMemcpyDeviceToDevice, stream_));
}

void CudaBackend::fill(float* dst, float value, int64_t n) {
  dispatch([&](auto tag) {
    using T = typename decltype(tag)::type;
    cuda::fill<T>(stream_, dev<T>(dst), value, n);
  });
}

void CudaBackend::gemm(bool ta, bool tb, int m, int n, int k, float alpha, const float* a, int lda, const float* b,
                       int ldb, float beta, float* c, int ldc) {
  if (m <= 0 || n <= 0) return;
  dispatch([&](auto tag) {
    using T = typename decltype(tag)::type;
    const cudaDataType_t t = data_type<T>();
    PS_CUBLAS_CHECK(cublasGemmEx(blas_, op(tb), op(ta), n, m, k, &alpha, dev<T>(b), t, ldb, dev<T>(a), t, lda, &beta,
                                 dev<T>(c), t, ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  });
}

void CudaBackend::gemm_batched(bool ta, bool tb, int m, int n, int k, float alpha, const float* a, int lda,
                               int64_t stride_a, const float* b, int ldb, int64_t stride_b, float beta, float* c,
                               int ldc, int64_t stride_c, int batch) {
  if (m <= 0 || n <= 0 || batch <= 0) return;
  dispatch([&](auto tag) {
    using T = typename decltype(tag)::type;
    const cudaDataType_t t = data_type<T>();
    PS_CUBLAS_CHECK(cublasGemmStridedBatchedEx(blas_, op(tb), op(ta), n, m, k, &alpha, dev<T>(b), t, ldb, stride_b,
                                               dev<T>(a), t, lda, stride_a, &beta, dev<T>(c), t, ldc, stride_c, batch,
                                               CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  });
}

void CudaBackend::add_bias(float* y, const float* bias, int rows, int cols) {
  dispatch([&](auto tag) {
    using T = typename decltype(tag)::type;
    cuda::add_bias<T>(stream_, dev<T>(y), dev<T>(bias), rows, cols);
  });
}

void CudaBackend::sum_rows_accumulate(float* out, const float* x, int rows, int cols) {
  dispatch([&](auto tag) {
    using T = typename decltype(tag)::type;
    cuda::sum_rows_accumulate<T>(stream_, dev<T>(out), dev<T>(x), rows, cols);
  });
}

void CudaBackend::add(float* out, const float* a, const float* b, int64_t n) {
  dispatch([&](auto tag) {
    using T = typename decltype(tag)::type;
    cuda::add<T>(stream_, dev<T>(out), dev<T>(a), dev<T>(b), n);
  });
}

void CudaBackend::gelu_forward(float* y, const float* x, int64_t n) {
  dispatch([&](auto tag) {
    using T = typename decltype(tag)::type;
    cuda::gelu_forward<T>(stream_, dev<T>(y), dev<T>(x), n);
  });
}

void CudaBackend::gelu_backward(float* dx, const float* x, const float* dy, int64_t n) {
  dispatch([&](auto tag) {
    using T = typename decltype(tag)::type;
    cuda::gelu_backward<T>(stream_, dev<T>(dx), dev<T>(x), dev<T>(dy), n);
  });
}

void CudaBackend::layernorm_forward(float* y, float* mean, float* rstd, const float* x, const float* gamma,
                                    const float* beta, int rows, int cols) {
  dispatch([&](auto tag) {
    using T = typename decltype(tag)::type;
    cuda::layernorm_forward<T>(stream_, dev<T>(y), dev<T>(mean), dev<T>(rstd), dev<T>(x), dev<T>(gamma),
                               dev<T>(beta), rows, cols);
  });
}

void CudaBackend::layernorm_backward_input(float* dx, const float* dy, const float* x, const float* mean,
                                           const float* rstd, const float* gamma, int rows, int cols) {
  dispatch([&](auto tag) {
    using T = typename decltype(tag)::type;
    cuda::layernorm_backward_input<T>(stream_, dev<T>(dx), dev<T>(dy), dev<T>(x), dev<T>(mean), dev<T>(rstd),
                                      dev<T>(gamma), rows, cols);
  });
}

void CudaBackend::layernorm_backward_weight_accumulate(float* dgamma, float* dbeta, const float* dy, const float* x,
                                                       const float* mean, const float* rstd, int rows, int cols) {
  dispatch([&](auto tag) {
    using T = typename decltype(tag)::type;
    cuda::layernorm_backward_weight_accumulate<T>(stream_, dev<T>(dgamma), dev<T>(dbeta), dev<T>(dy), dev<T>(x),
                                                  dev<T>(mean), dev<T>(rstd), rows, cols);
  });
}

void CudaBackend::causal_softmax_forward(float* p, const float* scores, int rows, int seq) {
  dispatch([&](auto tag) {
    using T = typename decltype(tag)::type;
    cuda::causal_softmax_forward<T>(stream_, dev<T>(p), dev<T>(scores), rows, seq);
  });
}

void CudaBackend::causal_softmax_backward(float* dscores, const float* p, const float* dp, int rows, int seq) {
  dispatch([&](auto tag) {
    using T = typename decltype(tag)::type;
    cuda::causal_softmax_backward<T>(stream_, dev<T>(dscores), dev<T>(p), dev<T>(dp), rows, seq);
  });
}

double CudaBackend::mse_gradient(float* dy, const float* y, const float* target, float scale, int64_t n) {
  PS_CUDA_CHECK(cudaMemsetAsync(loss_device_, 0, sizeof(double), stream_));
  dispatch([&](auto tag) {
    using T = typename decltype(tag)::type;
    cuda::mse_gradient<T>(stream_, dev<T>(dy), dev<T>(y), dev<T>(target), scale, n, loss_device_);
  });
  PS_CUDA_CHECK(cudaMemcpyAsync(loss_host_, loss_device_, sizeof(double), cudaMemcpyDeviceToHost, stream_));
  PS_CUDA_CHECK(cudaStreamSynchronize(stream_));
  return *loss_host_;
}

void CudaBackend::sgd_step(float* w, const float* g, float lr, int64_t n) {
  dispatch([&](auto tag) {
    using T = typename decltype(tag)::type;
    cuda::sgd_step<T>(stream_, dev<T>(w), dev<T>(g), lr, n);
  });
}

void CudaBackend::adam_step(float* w, const float* g, float* m, float* v, const AdamSettings& s, int step,
                            int64_t n) {
  const float c1 = 1.0f - std::pow(s.beta1, static_cast<float>(step));
  const float c2 = 1.0f - std::pow(s.beta2, static_cast<float>(step));
  dispatch([&](auto tag) {
    using T = typename decltype(tag)::type;
    cuda::adam_step<T>(stream_, dev<T>(w), dev<T>(g), dev<T>(m), dev<T>(v), s.lr, s.beta1, s.beta2, s.eps, c1, c2,
                       n);
  });
}

void CudaBackend::flush_caches() {
  if (flush_bytes_ == 0) return;
  if (!flush_buffer_) flush_buffer_ = allocator_->allocate(flush_bytes_);
  PS_CUDA_CHECK(cudaMemsetAsync(flush_buffer_, ++flush_value_ & 0xff, flush_bytes_, stream_));
}

int64_t CudaBackend::now_ns() {
  PS_CUDA_CHECK(cudaEventRecord(now_event_, stream_));
  PS_CUDA_CHECK(cudaEventSynchronize(now_event_));
  float ms = 0;
  PS_CUDA_CHECK(cudaEventElapsedTime(&ms, ref_event_, now_event_));
  const int64_t now = ref_host_ns_ + static_cast<int64_t>(static_cast<double>(ms) * 1e6);
  // A float of milliseconds keeps ~0.1 us up to a second: move the reference on.
  if (ms > 1000.0f) {
    std::swap(ref_event_, now_event_);
    ref_host_ns_ = now;
  }
  return now;
}

}  // namespace pipescope::exec::cuda
