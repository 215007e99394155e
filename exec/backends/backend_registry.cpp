// The one place where backends are registered. The CUDA backend (exec/cuda/, built with
// PIPESCOPE_WITH_CUDA) is reached through exec/cuda/cuda_api.h, which carries no CUDA
// types; this file holds the only #ifdef for it outside CMake.
#include "core/error.h"
#include "core/json_reader.h"
#include "exec/backends/backend.h"
#include "exec/backends/cpu_backend.h"
#include "exec/transport/thread_transport.h"
#ifdef PIPESCOPE_WITH_CUDA
#include "exec/cuda/cuda_api.h"
#endif

namespace pipescope::exec {

std::vector<std::string> backend_names() {
  std::vector<std::string> names = {"cpu"};
#ifdef PIPESCOPE_WITH_CUDA
  names.push_back("cuda");  // "cuda:bf16" for bf16 storage, see exec/cuda/cuda_api.h
#endif
  return names;
}

std::unique_ptr<Backend> make_backend(const std::string& name, int device, int devices) {
  if (name == "cpu") return std::make_unique<CpuBackend>();
#ifdef PIPESCOPE_WITH_CUDA
  if (is_cuda_backend(name)) return make_cuda_backend(name, device, devices);
#endif
  std::string known;
  for (const std::string& n : backend_names()) known += (known.empty() ? "" : ", ") + n;
  (void)device;
  (void)devices;
  throw InputError("--backend: unknown or not built-in backend \"" + name + "\" (available: " + known + ")");
}

std::unique_ptr<Backend> make_backend(const std::string& name) { return make_backend(name, 0, 1); }

std::unique_ptr<Hub> make_hub(const std::string& backend, const Schedule& schedule, bool spin) {
#ifdef PIPESCOPE_WITH_CUDA
  if (is_cuda_backend(backend)) return make_cuda_hub(schedule);
#endif
  (void)backend;
  return std::make_unique<ThreadHub>(schedule.positions(), spin);
}

std::unique_ptr<Endpoint> make_rank_endpoint(const std::string& backend, Endpoint& control,
                                             const Schedule& schedule,
                                             const std::function<void(void*, std::size_t)>& broadcast) {
#ifdef PIPESCOPE_WITH_CUDA
  if (is_cuda_backend(backend)) return make_nccl_endpoint(control, schedule, broadcast);
#endif
  (void)backend, (void)control, (void)schedule, (void)broadcast;
  return nullptr;
}

std::string placement_note(const std::string& backend, int devices) {
#ifdef PIPESCOPE_WITH_CUDA
  if (is_cuda_backend(backend)) return cuda_placement_note(backend, devices);
#endif
  (void)backend;
  (void)devices;
  return "";
}

std::string measure_gemm_json(const std::string& backend, int m, int n, int k, int repeats) {
#ifdef PIPESCOPE_WITH_CUDA
  if (is_cuda_backend(backend)) {
    const GemmMeasurement g = measure_cuda_gemm(m, n, k, parse_cuda_backend_spec(backend).dtype, repeats);
    Json j = {{"m", g.m}, {"n", g.n}, {"k", g.k}, {"dtype", to_string(g.dtype)}, {"backend_ms", g.backend_ms},
              {"best_ms", g.best_ms}, {"backend_tflops", g.backend_tflops}, {"best_tflops", g.best_tflops},
              {"fraction", g.fraction}, {"algorithms", g.algorithms}};
    return j.dump();
  }
#endif
  (void)m, (void)n, (void)k, (void)repeats;
  throw InputError("gemm: measuring GEMM efficiency needs --backend cuda (got \"" + backend + "\")");
}

}  // namespace pipescope::exec
