// Analytic per-layer profiles of Hugging Face models on a named GPU: layers
// "model.embed_tokens", "model.layers.<i>", "lm_head" (final norm + head + loss), named
// as the transformers modules are, so export's split points are real module names.
// Invariant: a layer's time is its FLOPs / (peak x efficiency) plus, under tensor
// parallelism, its all-reduces over the node's link; the embedding lookup is bound by
// HBM bandwidth. Every number comes from the config, the GPU file and the flags.
//   GpuSpec gpu = load_gpu_spec("profiles/gpus/h100-sxm.json");
//   Profile p = make_hf_profile(load_hf_model("llama-3-8b.json"), gpu, {.sequence = 8192});
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/hardware.h"
#include "interop/hf_config.h"
#include "core/profile.h"

namespace pipescope {

// A hardware file (pipescope.hardware) of one GPU model, with its "gpu" section:
//   "gpu": {"peak_dense_tflops": {"fp32": 66.9, "tf32": 494.7, "bf16": 989.4, "fp16": 989.4},
//           "hbm_gb_per_s": 3350, "collective_gb_per_s": 450, "sources": {...}}
struct GpuSpec {
  Hardware node;                              // devices, memory, NVLink / fabric, network
  std::map<std::string, double> peak_tflops;  // dense, per dtype
  double hbm_gb_per_s = 0;
  double collective_gb_per_s = 0;             // what one GPU's all-reduce reaches inside the node
};
GpuSpec gpu_spec_from_json(const JsonReader& reader);
GpuSpec load_gpu_spec(const std::string& path);
// `name_or_path` is a file, or a name looked up as <dir>/<name>.json in `dirs` in order.
std::string find_gpu_file(const std::string& name_or_path, const std::vector<std::string>& dirs);

struct HfProfileOptions {
  int64_t sequence = 4096;
  Dtype dtype = Dtype::Bf16;        // fp32: IEEE, no TF32
  int tensor_parallel = 1;          // t GPUs per pipescope device
  double efficiency = 0.45;         // achieved / peak FLOP/s (and HBM bandwidth)
  bool selective_recompute = true;  // attention probabilities not kept (flash attention)
  std::vector<double> batch_sizes = {1, 2, 4, 8};
};

// Throws InputError for a dtype the GPU file has no peak for, a tensor-parallel size
// that does not divide the heads, KV heads, FFN or vocabulary, or bad options.
Profile make_hf_profile(const HfModel& model, const GpuSpec& gpu, const HfProfileOptions& options);

// The hardware a plan over `gpus` GPUs of this model sees when each pipescope device
// is one tensor-parallel group of t GPUs: gpus / t devices, per-GPU memory, the same
// per-GPU links (each rank sends its 1/t shard over its own link).
Hardware tensor_parallel_hardware(const GpuSpec& gpu, int gpus, int tensor_parallel);

}  // namespace pipescope
