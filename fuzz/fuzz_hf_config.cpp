// Fuzz target: gpu_spec_from_json, gpu_model_from_json (llm/'s GEMM curve, timing a few
// shapes by it) and hf_model_from_json on arbitrary bytes, then the counts, the FLOPs and the
// analytic profile of whatever it accepts; the profile must read back. Only InputError
// may leave (fuzz_readers.h's rule).
#include <cstdlib>

#include "interop/hf_profile.h"
#include "llm/gpu_model.h"
#include "fuzz/fuzz_readers.h"

using namespace pipescope;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  if (size > fuzz::kMaxInput) return -1;
  try {  // the same bytes as a GPU file (pipescope.hardware + "gpu")
    (void)gpu_spec_from_json(JsonReader::from_text(std::string(reinterpret_cast<const char*>(data), size), "fuzz-gpu"));
  } catch (const InputError&) {
  }
  try {  // the same bytes as llm/'s GPU model: every accepted curve times any shape
    const GpuModel g = gpu_model_from_json(JsonReader::from_text(std::string(reinterpret_cast<const char*>(data), size), "fuzz-gpu"));
    for (const GemmShape& shape : {GemmShape{1, 1, 1}, GemmShape{8192, 2304, 6144}, GemmShape{2048, 2048, 96, 32}}) {
      const double e = gemm_efficiency(g, shape);
      if (!(e > 0 && e <= 1) || gemm_ns(g, shape) < 0) std::abort();
    }
  } catch (const InputError&) {
  }
  try {
    HfModel m = hf_model_from_json(JsonReader::from_text(std::string(reinterpret_cast<const char*>(data), size), "fuzz"));
    (void)count_parameters(m).total();
    (void)training_flops_per_token(m, 128);
    GpuSpec gpu;
    gpu.node = Hardware::ideal(8);
    gpu.node.memory_bytes = int64_t{80} << 30;
    gpu.peak_tflops["bf16"] = 989.4;
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
