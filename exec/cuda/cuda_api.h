// The CUDA backend's public face: no CUDA type crosses this header, so the rest of
// pipescope (registry, CLI, tests) can use it in any build that has PIPESCOPE_WITH_CUDA.
// A backend spec is "cuda[:fp32|:bf16][:part=K]": the dtype stored (bf16 keeps fp32
// arithmetic and accumulation), and for profiling an SM partition of 1/K of the GPU.
// Placement for a run over `devices` devices: GPU `device` when the machine has that
// many GPUs ("gpus" mode), else SM partition `device` of `devices` of GPU 0 through a
// CUDA green context ("partitions" mode: K stages as K virtual devices).
//   CudaStatus s = cuda_status();  if (s.devices == 0) skip(s.reason);
//   auto be = make_cuda_backend("cuda:bf16", 0, 1);
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/dtype.h"
#include "exec/backends/backend.h"
#include "exec/transport/transport.h"

namespace pipescope::exec {

struct CudaStatus {
  int devices = 0;     // visible GPUs; 0 when none can be used
  std::string reason;  // why devices == 0, e.g. "cudaGetDeviceCount returned 35 (cudaErrorInsufficientDriver)"
  int runtime_version = 0, driver_version = 0;
  std::string nccl_version;  // "2.28.9"
};
// Never throws: a machine without a driver gives devices == 0 and the reason.
CudaStatus cuda_status();

struct CudaBackendSpec {
  Dtype dtype = Dtype::Fp32;  // Fp32 or Bf16 (the spec's text is parsed here, at the edge)
  int partitions = 0;         // 0: decide from the placement; K: SM partition of 1/K
};
// Throws InputError on a malformed spec ("cuda:fp16", "cuda:part=0").
CudaBackendSpec parse_cuda_backend_spec(const std::string& spec);

// Throws RunError (naming the CUDA error) when no GPU can be used.
std::unique_ptr<Backend> make_cuda_backend(const std::string& spec, int device, int devices);

// "gpus" or "partitions": how a run over `devices` devices is placed on this machine.
std::string cuda_placement_mode(int devices);
// The line a measurement carries about it: mode, GPU name, SMs per partition, transfers.
std::string cuda_placement_note(const std::string& spec, int devices);

// In-process hub for CUDA backends (exec/cuda/cuda_hub.h): one GPU per device ->
// NCCL send/recv between the worker threads; SM partitions of one GPU -> device-to-
// device copies on each receiver's transfer stream. Either way transfers overlap compute.
std::unique_ptr<Hub> make_cuda_hub(const Schedule& schedule);

// One rank per GPU under mpirun: NCCL send/recv (exec/cuda/nccl_endpoint.h). The rank's
// GPU is its node-local rank (OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID or
// SLURM_LOCALID) modulo the GPUs it sees; throws InputError when there are fewer GPUs
// on the node than ranks (NCCL cannot put two ranks on one GPU).
std::unique_ptr<Endpoint> make_nccl_endpoint(Endpoint& control, const Schedule& schedule,
                                             const std::function<void(void*, std::size_t)>& broadcast);
// The GPU a worker of a multi-process run uses (see above); -1 in a single process.
int cuda_local_rank();

// The bf16 / fp32 GEMM C[m,n] = A[m,k] B[k,n] (row-major) as the backend runs it
// (cublasGemmEx, default algorithm) vs the fastest of cuBLASLt's heuristic algorithms
// for the same shape: warm-up, then the mean over `repeats` timed with CUDA events.
struct GemmMeasurement {
  int m = 0, n = 0, k = 0;
  Dtype dtype = Dtype::Fp32;  // fp32 or bf16
  double backend_ms = 0, best_ms = 0;
  double backend_tflops = 0, best_tflops = 0;
  double fraction = 0;  // backend_tflops / best_tflops
  int algorithms = 0;   // cuBLASLt algorithms timed
};
GemmMeasurement measure_cuda_gemm(int m, int n, int k, Dtype dtype, int repeats);

// Memory the backend's caching allocator holds on its device (for reports and tests).
struct CudaMemoryStats {
  int64_t in_use_bytes = 0, peak_in_use_bytes = 0;
  int64_t reserved_bytes = 0, peak_reserved_bytes = 0;
  int64_t device_mallocs = 0;
};
// Throws InputError when `backend` is not a CUDA backend.
CudaMemoryStats cuda_memory_stats(Backend& backend);

}  // namespace pipescope::exec
