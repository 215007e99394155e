// Fuzz target: gpu_model_from_json (the one GPU-file reader: its GEMM curve timing a few
// shapes) and hf_model_from_json on arbitrary bytes, then the parameter count and the
// analytic profile (llm/'s cost model) of whatever it accepts; the profile must read back.
// Only InputError may leave (fuzz_readers.h's rule).
#include <cstdlib>

#include "interop/hf_profile.h"
#include "llm/gpu_model.h"
#include "llm/memory.h"
#include "fuzz/fuzz_readers.h"

using namespace pipescope;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  if (size > fuzz::kMaxInput) return -1;
  try {  // the same bytes as a GPU file: every accepted curve times any shape
    const GpuModel g = gpu_model_from_json(JsonReader::from_text(std::string(reinterpret_cast<const char*>(data), size), "fuzz-gpu"));
    for (const GemmShape& shape : {GemmShape{1, 1, 1}, GemmShape{8192, 2304, 6144}, GemmShape{2048, 2048, 96, 32}}) {
      const double e = gemm_efficiency(g, shape);
      if (!(e > 0 && e <= 1) || gemm_ns(g, shape) < 0) std::abort();
    }
  } catch (const InputError&) {
  }
  try {
    HfModel m = hf_model_from_json(JsonReader::from_text(std::string(reinterpret_cast<const char*>(data), size), "fuzz"));
    if (!(model_parameters(m.shape).total() > 0)) std::abort();
    // The profile's cost is linear in the layers (a 62,000-layer config writes a 58 MB profile
    // in 8 s, 43 s under ASan: a slow unit, not a hang); ReliabilityLimits covers 10^6 layers.
    if (m.shape.layers > 1000) return 0;
    GpuModel gpu;
    gpu.node = Hardware::ideal(8);
    gpu.node.memory_bytes = int64_t{80} << 30;
    gpu.peak_dense_tflops["bf16"] = gpu.peak_tflops = 989.4;
    gpu.hbm_gb_per_s = 3350;
    gpu.collective_gb_per_s = 450;
    HfProfileOptions o;
    o.sequence = 128;
    o.batch_sizes = {1, 2};
    Profile p = make_hf_profile(m, gpu, o);
    (void)profile_from_json(JsonReader::from_text(profile_to_json(p).dump(), "fuzz-profile"));
  } catch (const InputError&) {
    return 0;
  }
  return 0;
}
