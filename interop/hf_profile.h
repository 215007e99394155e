// Analytic per-layer profiles of Hugging Face models on a GPU file: layers
// "model.embed_tokens", "model.layers.<i>", "lm_head" (final norm + head + loss), named
// as the transformers modules are, so export's split points are real module names.
// Invariant: every number is llm/'s one cost model at the layout (t, sequence parallel
// when t > 1, recompute, micro-batch b) of each batch size: F / I / W times from
// llm/layer_time.h (the GPU file's GEMM curve, elementwise bytes, the tensor-parallel
// collectives), activation and weight-gradient bytes from llm/memory.h (Korthikanti
// et al. Table 2), parameters from llm/memory.h's count, the optimizer step from
// llm/step_time.h's. So a layer here equals, ns for ns and byte for byte, the layer
// llm_pipeline (llm/step_time.h) builds for the same shape, layout and GPU
// (tests/interop/interop_hf_test.cpp); only the tied head differs: it counts its own
// copy of the embedding, as Megatron-LM's last stage keeps one when p > 1.
//   GpuModel gpu = load_gpu_model("profiles/gpus/h100-sxm.json");
//   Profile p = make_hf_profile(load_hf_model("llama-3-8b.json"), gpu, {.sequence = 8192});
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/hardware.h"
#include "core/profile.h"
#include "interop/hf_config.h"
#include "llm/gpu_model.h"
#include "llm/layout.h"

namespace pipescope {

struct HfProfileOptions {
  int64_t sequence = 4096;
  Dtype dtype = Dtype::Bf16;        // bf16 | fp16 (the GPU file's peak for it); 2-byte activations
  int tensor_parallel = 1;          // t GPUs per pipescope device, with sequence parallelism
  // Megatron's selective recompute (the attention core rerun in I, its scores not kept), or
  // none (--no-selective-recompute); full is a plan's (whole stages), refused here.
  Recompute recompute = Recompute::Selective;
  std::vector<double> batch_sizes = {1, 2, 4, 8};  // whole samples
  AttentionKernel attention = AttentionKernel::Flash;  // --attention-backend (llm/layout.h)
};

// The layout each batch size is timed and counted at (p = 1, one micro-batch).
ParallelLayout hf_profile_layout(const HfProfileOptions& options, int micro_batch);

// Throws InputError for a dtype the GPU file has no peak for (or fp32: the cost model
// counts 2-byte activations and operands), a tensor-parallel size that does not divide
// the heads, KV heads, FFN or vocabulary, or a batch size that is not a whole number.
Profile make_hf_profile(const HfModel& model, const GpuModel& gpu, const HfProfileOptions& options);

// The hardware a plan over `gpus` GPUs of this model sees when each pipescope device
// is one tensor-parallel group of t GPUs: gpus / t devices, per-GPU memory, the same
// per-GPU links (each rank sends its 1/t shard over its own link).
Hardware tensor_parallel_hardware(const GpuModel& gpu, int gpus, int tensor_parallel);

// The job an analytic profile stands for: the model, GPU file and options that
// make_hf_profile turns into exactly this profile. `plan --profile FILE --framework F`
// plans such a profile as that job (the layout search, t / cp / ep / d / sharding
// included), so it gives the answer `plan --hf-config` gives for the same model and GPU.
struct HfProfileJob {
  HfModel model;             // the shape the specs state; vocabulary as the config has it (unpadded)
  std::string gpu;           // the GPU file's name: <gpu>.json in $PIPESCOPE_GPU_DIR or profiles/gpus/
  GpuModel gpu_model;        // that file, read
  HfProfileOptions options;  // sequence, dtype, t, recompute (selective or none), batch sizes
};

// The job, when `profile` is, number for number, what make_hf_profile writes for a GPU
// file of $PIPESCOPE_GPU_DIR or the bundled profiles/gpus/; otherwise nullopt. `why`
// (when given) stays empty for a profile that is not of `profile synth --hf-config` (its
// layers' specs say), and says so for one that is but whose costs no GPU file gives (a
// measured or edited profile).
std::optional<HfProfileJob> hf_profile_job(const Profile& profile, std::string* why = nullptr);

}  // namespace pipescope
