// The seam between layers and the hardware that runs them. Layers hold pointers into
// backend memory and call only these kernels; they never touch tensor data themselves,
// so a CUDA backend (exec/cuda/, registered in backend_registry.cpp) slots in behind the
// same interface. All matrices are row-major. The pointers are handles that count in
// floats (handle + i is element i) whatever the backend stores: fp32 on the CPU, fp32 or
// bf16 (fp32 arithmetic) on CUDA; element_bytes() says how many bytes an element really
// takes. Kernels named *_accumulate add into their output (gradients accumulate over
// micro-batches). Memory categories are charged by exec/memory/tensor.h's Buffer around
// allocate/deallocate, not by backends, so every backend gets the same accounting for free.
//   std::unique_ptr<Backend> be = make_backend("cpu");
//   be->gemm(false, false, m, n, k, 1.0f, a, k, b, n, 0.0f, c, n);
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace pipescope::exec {

struct AdamSettings {
  float lr = 1e-3f, beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  // What one element takes in memory (4 for fp32, 2 for bf16) and its type's name.
  virtual int64_t element_bytes() const { return 4; }
  virtual std::string dtype() const { return "fp32"; }
  // For profiles: the device ("" = let the caller describe it) and its memory in bytes.
  virtual std::string device_name() const { return ""; }
  virtual int64_t device_memory_bytes() const { return 0; }
  // Evicts caches between timed repeats (CUDA: writes a buffer larger than L2).
  virtual void flush_caches() {}

  // Memory on the backend's device, and transfers to and from the host.
  virtual float* allocate(int64_t floats) = 0;
  virtual void deallocate(float* p, int64_t floats) = 0;
  virtual void upload(float* dst, const float* host, int64_t n) = 0;
  virtual void download(float* host, const float* src, int64_t n) = 0;
  virtual void copy(float* dst, const float* src, int64_t n) = 0;
  virtual void fill(float* dst, float value, int64_t n) = 0;

  // C = alpha op(A) op(B) + beta C; op(A) is m x k, op(B) is k x n.
  virtual void gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a,
                    int lda, const float* b, int ldb, float beta, float* c, int ldc) = 0;
  // `batch` gemms; matrix i starts at a + i*stride_a (and b, c likewise).
  virtual void gemm_batched(bool trans_a, bool trans_b, int m, int n, int k, float alpha,
                            const float* a, int lda, int64_t stride_a, const float* b, int ldb,
                            int64_t stride_b, float beta, float* c, int ldc, int64_t stride_c,
                            int batch) = 0;

  virtual void add_bias(float* y, const float* bias, int rows, int cols) = 0;          // y[r,:] += bias
  virtual void sum_rows_accumulate(float* out, const float* x, int rows, int cols) = 0;  // out += sum_r x[r,:]
  virtual void add(float* out, const float* a, const float* b, int64_t n) = 0;          // out = a + b
  virtual void gelu_forward(float* y, const float* x, int64_t n) = 0;                   // tanh approximation
  virtual void gelu_backward(float* dx, const float* x, const float* dy, int64_t n) = 0;
  // y = (x - mean) * rstd * gamma + beta per row; mean and rstd (one per row) are outputs.
  virtual void layernorm_forward(float* y, float* mean, float* rstd, const float* x,
                                 const float* gamma, const float* beta, int rows, int cols) = 0;
  virtual void layernorm_backward_input(float* dx, const float* dy, const float* x,
                                        const float* mean, const float* rstd, const float* gamma,
                                        int rows, int cols) = 0;
  virtual void layernorm_backward_weight_accumulate(float* dgamma, float* dbeta, const float* dy,
                                                    const float* x, const float* mean,
                                                    const float* rstd, int rows, int cols) = 0;
  // Row r of a [rows, seq] score block is query position r % seq; keys after it are masked.
  virtual void causal_softmax_forward(float* p, const float* scores, int rows, int seq) = 0;
  virtual void causal_softmax_backward(float* dscores, const float* p, const float* dp, int rows,
                                       int seq) = 0;
  // dy = scale * (y - target); returns sum((y - target)^2).
  virtual double mse_gradient(float* dy, const float* y, const float* target, float scale,
                              int64_t n) = 0;
  virtual void sgd_step(float* w, const float* g, float lr, int64_t n) = 0;
  // One Adam update; `step` counts from 1 (bias correction).
  virtual void adam_step(float* w, const float* g, float* m, float* v, const AdamSettings& s,
                         int step, int64_t n) = 0;

  // Timing: a monotonic clock in ns, after waiting for queued work.
  virtual int64_t now_ns() = 0;
};

// "cpu" always; other names only when built in. Throws InputError for unknown names.
std::unique_ptr<Backend> make_backend(const std::string& name);
// The backend of device `device` of a run over `devices` devices (CUDA: GPU `device`
// when there are that many GPUs, else SM partition `device` of `devices` of GPU 0).
std::unique_ptr<Backend> make_backend(const std::string& name, int device, int devices);
std::vector<std::string> backend_names();
// Whether a backend spec names the CUDA backend ("cuda", "cuda:bf16", "cuda:bf16:part=4").
inline bool is_cuda_backend(const std::string& spec) { return spec == "cuda" || spec.rfind("cuda:", 0) == 0; }
// One line saying where a run over `devices` devices of this backend runs and how its
// transfers travel ("" for cpu), e.g. "cuda: 4 SM partitions of one NVIDIA H200 ...".
std::string placement_note(const std::string& backend, int devices);
// The backend's GEMM C[m,n] = A[m,k] B[k,n] against the best cuBLASLt algorithm for that
// shape, as one JSON object (m, n, k, dtype, backend_ms, best_ms, backend_tflops,
// best_tflops, fraction, algorithms). CUDA only: throws InputError for other backends.
std::string measure_gemm_json(const std::string& backend, int m, int n, int k, int repeats);

}  // namespace pipescope::exec
