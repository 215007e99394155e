// The CUDA backend: one GPU (or one SM partition of it), one compute stream, cuBLAS for
// every matrix product (cublasGemmEx / cublasGemmStridedBatchedEx with fp32 compute,
// never TF32), the kernels of kernels.h for the rest, device memory from one
// CachingAllocator. Storage is fp32 or bf16. The Backend interface counts pointers in
// floats; in bf16 a handle is twice the device address (handle + i floats = 2 x (address
// + i bf16)), so the layers' pointer arithmetic still lands on element i; in fp32 the
// handle is the address. Work is queued on the stream; now_ns() records a CUDA event,
// waits for it, and maps GPU time onto the host's steady clock, so op times are the
// GPU's. Use a backend from the thread that created it.
//   CudaBackend be({.dtype = "bf16"}, 0, 0, 1);  float* x = be.allocate(n);
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <memory>

#include "exec/backends/backend.h"
#include "exec/cuda/caching_allocator.h"
#include "exec/cuda/cuda_api.h"
#include "exec/cuda/green_context.h"

namespace pipescope::exec::cuda {

class CudaBackend : public Backend {
 public:
  // GPU `gpu`; with parts > 1 only SM partition `part` of `parts` (a green context).
  CudaBackend(const CudaBackendSpec& spec, int gpu, int part, int parts);
  ~CudaBackend() override;

  std::string name() const override { return "cuda"; }
  int64_t element_bytes() const override { return bf16_ ? 2 : 4; }
  std::string dtype() const override { return bf16_ ? "bf16" : "fp32"; }
  std::string device_name() const override { return device_name_; }
  int64_t device_memory_bytes() const override { return device_memory_; }
  void flush_caches() override;

  float* allocate(int64_t floats) override;
  void deallocate(float* p, int64_t floats) override;
  void upload(float* dst, const float* host, int64_t n) override;
  void download(float* host, const float* src, int64_t n) override;
  void copy(float* dst, const float* src, int64_t n) override;
  void fill(float* dst, float value, int64_t n) override;
  void gemm(bool ta, bool tb, int m, int n, int k, float alpha, const float* a, int lda, const float* b, int ldb,
            float beta, float* c, int ldc) override;
  void gemm_batched(bool ta, bool tb, int m, int n, int k, float alpha, const float* a, int lda, int64_t stride_a,
                    const float* b, int ldb, int64_t stride_b, float beta, float* c, int ldc, int64_t stride_c,
                    int batch) override;
  void add_bias(float* y, const float* bias, int rows, int cols) override;
  void sum_rows_accumulate(float* out, const float* x, int rows, int cols) override;
  void add(float* out, const float* a, const float* b, int64_t n) override;
  void gelu_forward(float* y, const float* x, int64_t n) override;
  void gelu_backward(float* dx, const float* x, const float* dy, int64_t n) override;
  void layernorm_forward(float* y, float* mean, float* rstd, const float* x, const float* gamma, const float* beta,
                         int rows, int cols) override;
  void layernorm_backward_input(float* dx, const float* dy, const float* x, const float* mean, const float* rstd,
                                const float* gamma, int rows, int cols) override;
  void layernorm_backward_weight_accumulate(float* dgamma, float* dbeta, const float* dy, const float* x,
                                            const float* mean, const float* rstd, int rows, int cols) override;
  void causal_softmax_forward(float* p, const float* scores, int rows, int seq) override;
  void causal_softmax_backward(float* dscores, const float* p, const float* dp, int rows, int seq) override;
  double mse_gradient(float* dy, const float* y, const float* target, float scale, int64_t n) override;
  void sgd_step(float* w, const float* g, float lr, int64_t n) override;
  void adam_step(float* w, const float* g, float* m, float* v, const AdamSettings& s, int step,
                 int64_t n) override;
  int64_t now_ns() override;

  // For transports and tests.
  int gpu() const { return gpu_; }
  cudaStream_t stream() const { return stream_; }
  CachingAllocator& allocator() { return *allocator_; }
  std::shared_ptr<CachingAllocator> shared_allocator() { return allocator_; }
  void* device_address(const float* handle) const;  // the bytes behind a handle
  const GreenPartition* partition() const { return partition_.get(); }

 private:
  template <class F> void dispatch(F&& f);

  bool bf16_;
  int gpu_;
  std::unique_ptr<GreenPartition> partition_;
  std::shared_ptr<CachingAllocator> allocator_;  // shared: staging blocks in flight outlive us
  cudaStream_t stream_ = nullptr;
  cublasHandle_t blas_ = nullptr;
  void* workspace_ = nullptr;
  std::size_t workspace_bytes_ = 32u << 20;
  double* loss_device_ = nullptr;
  double* loss_host_ = nullptr;  // pinned
  void* flush_buffer_ = nullptr;
  std::size_t flush_bytes_ = 0;
  int flush_value_ = 0;
  cudaEvent_t ref_event_ = nullptr, now_event_ = nullptr;
  int64_t ref_host_ns_ = 0;
  std::string device_name_;
  int64_t device_memory_ = 0;
};

}  // namespace pipescope::exec::cuda
