// The one place where backends are registered. A CUDA backend (exec/cuda/) adds its
// branch under PIPESCOPE_WITH_CUDA here and nowhere else.
#include "core/error.h"
#include "exec/backend.h"
#include "exec/cpu_backend.h"

namespace pipescope::exec {

std::vector<std::string> backend_names() {
  std::vector<std::string> names = {"cpu"};
#ifdef PIPESCOPE_WITH_CUDA
  // names.push_back("cuda");  // exec/cuda/ registers here
#endif
  return names;
}

std::unique_ptr<Backend> make_backend(const std::string& name) {
  if (name == "cpu") return std::make_unique<CpuBackend>();
#ifdef PIPESCOPE_WITH_CUDA
  // if (name == "cuda") return make_cuda_backend();
#endif
  std::string known;
  for (const std::string& n : backend_names()) known += (known.empty() ? "" : ", ") + n;
  throw InputError("--backend: unknown or not built-in backend \"" + name + "\" (available: " + known + ")");
}

}  // namespace pipescope::exec
