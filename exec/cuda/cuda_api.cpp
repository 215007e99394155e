// Device query, spec parsing and placement for the CUDA backend (see cuda_api.h).
#include "exec/cuda/cuda_api.h"

#include <nccl.h>

#include "core/error.h"
#include "exec/cuda/cuda_backend.h"
#include "exec/cuda/cuda_hub.h"
#include "exec/cuda/nccl_endpoint.h"

#include <cstdlib>

namespace pipescope::exec {

CudaStatus cuda_status() {
  CudaStatus s;
  cudaRuntimeGetVersion(&s.runtime_version);
  cudaDriverGetVersion(&s.driver_version);
  int v = 0;
  if (ncclGetVersion(&v) == ncclSuccess) {
    s.nccl_version = std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
  }
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    cudaGetLastError();
    s.reason = "cudaGetDeviceCount returned " + std::to_string(static_cast<int>(e)) + " (" + cudaGetErrorName(e) + ")";
    return s;
  }
  if (n == 0) {
    s.reason = "cudaGetDeviceCount found no device";
    return s;
  }
  s.devices = n;
  return s;
}

CudaBackendSpec parse_cuda_backend_spec(const std::string& spec) {
  CudaBackendSpec out;
  if (spec.rfind("cuda", 0) != 0) throw InputError("--backend: \"" + spec + "\" is not a CUDA backend");
  std::string rest = spec.substr(4);
  while (!rest.empty()) {
    if (rest[0] != ':') throw InputError("--backend: expected cuda[:fp32|:bf16][:part=K], got \"" + spec + "\"");
    rest.erase(0, 1);
    const std::string item = rest.substr(0, rest.find(':'));
    rest.erase(0, item.size());
    if (item == "fp32" || item == "bf16") {
      out.dtype = *dtype_from_name(item);
    } else if (item.rfind("part=", 0) == 0) {
      try {
        std::size_t used = 0;
        out.partitions = std::stoi(item.substr(5), &used);
        if (used != item.size() - 5 || out.partitions < 1 || out.partitions > 64) throw std::invalid_argument(item);
      } catch (const std::exception&) {
        throw InputError("--backend: part=K needs K between 1 and 64, got \"" + item + "\"");
      }
    } else {
      throw InputError("--backend: unknown CUDA option \"" + item + "\" in \"" + spec +
                       "\" (expected fp32, bf16 or part=K)");
    }
  }
  return out;
}

std::string cuda_placement_mode(int devices) {
  const CudaStatus s = cuda_status();
  return devices > 1 && s.devices < devices ? "partitions" : "gpus";
}

std::unique_ptr<Backend> make_cuda_backend(const std::string& spec_text, int device, int devices) {
  const CudaBackendSpec spec = parse_cuda_backend_spec(spec_text);
  const CudaStatus s = cuda_status();
  if (s.devices == 0) throw RunError("--backend cuda: no usable CUDA device: " + s.reason);
  if (spec.partitions > 0) return std::make_unique<cuda::CudaBackend>(spec, 0, device % spec.partitions, spec.partitions);
  if (const int local = cuda_local_rank(); local >= 0) {  // one rank per GPU (mpirun), references too
    return std::make_unique<cuda::CudaBackend>(spec, local % s.devices, 0, 1);
  }
  if (devices <= 1) return std::make_unique<cuda::CudaBackend>(spec, 0, 0, 1);
  if (s.devices >= devices) return std::make_unique<cuda::CudaBackend>(spec, device, 0, 1);
  return std::make_unique<cuda::CudaBackend>(spec, 0, device, devices);
}

std::string cuda_placement_note(const std::string& spec_text, int devices) {
  const CudaBackendSpec spec = parse_cuda_backend_spec(spec_text);
  const CudaStatus s = cuda_status();
  std::string gpu = "no GPU";
  if (s.devices > 0) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, 0) == cudaSuccess) gpu = prop.name;
  }
  std::string where;
  if (spec.partitions > 1) {
    where = "SM partitions (1/" + std::to_string(spec.partitions) + " of one " + gpu + " each, green contexts)";
  } else if (devices <= 1) {
    where = "one whole " + gpu;
  } else if (cuda_local_rank() >= 0) {
    where = std::to_string(devices) + " MPI ranks, one GPU each (" + gpu + "), NCCL send/recv between them";
  } else if (cuda_placement_mode(devices) == "gpus") {
    where = std::to_string(devices) + " GPUs (" + gpu + "), one thread each, NCCL send/recv between them";
  } else {
    where = std::to_string(devices) + " SM partitions of one " + gpu +
            " (green contexts, K stages as K virtual devices), device-to-device copies between them";
  }
  return "cuda (" + to_string(spec.dtype) + "): " + where;
}

std::unique_ptr<Hub> make_cuda_hub(const Schedule& schedule) { return std::make_unique<cuda::CudaHub>(schedule); }

int cuda_local_rank() {
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"}) {
    if (const char* v = std::getenv(name)) return std::atoi(v);
  }
  return -1;
}

std::unique_ptr<Endpoint> make_nccl_endpoint(Endpoint& control, const Schedule& schedule,
                                             const std::function<void(void*, std::size_t)>& broadcast) {
  const CudaStatus s = cuda_status();
  if (s.devices == 0) throw RunError("--backend cuda: no usable CUDA device: " + s.reason);
  const int local = std::max(cuda_local_rank(), 0);
  if (local >= s.devices) {
    throw InputError("--transport mpi --backend cuda: node-local rank " + std::to_string(local) + " has no GPU of its own (" +
                     std::to_string(s.devices) + " visible); NCCL needs one GPU per rank (or use --transport threads, "
                     "which runs K stages as K SM partitions of one GPU)");
  }
  return std::make_unique<cuda::NcclEndpoint>(control, schedule, local, broadcast);
}

CudaMemoryStats cuda_memory_stats(Backend& backend) {
  auto* be = dynamic_cast<cuda::CudaBackend*>(&backend);
  if (!be) throw InputError("cuda_memory_stats: the " + backend.name() + " backend is not a CUDA backend");
  const cuda::CachingAllocator::Stats a = be->allocator().stats();
  return {a.in_use, a.peak_in_use, a.reserved, a.peak_reserved, a.mallocs};
}

}  // namespace pipescope::exec
