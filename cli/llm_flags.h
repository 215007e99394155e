// Megatron-LM's model and layout flags, declared once for every LLM-scale command
// (llm-time, llm-memory, llm-plan): the model flags (or a Hugging Face config.json) become
// a TransformerShape, the layout flags a ParallelLayout, and llm/layout_check.h's
// validate_layout is the one place either is checked. Invariant: what job_from_flags
// returns passed validate_layout for its GPU count and framework, with the vocabulary
// padded as Megatron pads it (--make-vocab-size-divisible-by x t); bad input throws
// InputError naming the flag and the numbers.
//   LlmFlags f;  add_model_flags(cmd, f);  add_layout_flags(cmd, f, {.gpus_required = true});
//   LlmJob job = job_from_flags(f);  // in the callback
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

#include "llm/gpu_model.h"
#include "llm/job.h"
#include "llm/layout.h"
#include "llm/layout_check.h"

namespace pipescope::cli {

struct LlmFlags {
  // Model: --hf-config, then any model flag over it.
  std::string hf_config;
  TransformerShape shape;          // the flags as given (0: unset)
  std::string normalization;       // LayerNorm | RMSNorm
  bool untie = false, disable_bias = false, swiglu = false, add_qkv_bias = false;
  std::string position_embedding;  // --position-embedding-type: rope | learned_absolute ("": the config's, else rope)
  int vocab_divisible_by = 128;
  // What `export --to megatron` writes that no count of pipescope's reads (the numerics and
  // switches Megatron needs to build the same model): checked, then kept out of the job.
  bool group_query_attention = false, use_rope_scaling = false;
  int max_position_embeddings = 0;
  double rotary_base = 0, norm_epsilon = 0, init_method_std = 0, rope_scaling_factor = 0;
  std::string moe_token_dispatcher;
  // Layout.
  ParallelLayout layout;
  int gpus = 0;                    // world size; 0 (where allowed): t cp p, so d = 1
  int global_batch = 0;            // 0 (where allowed): b x p x d
  int layers_per_virtual = 0;      // --num-layers-per-virtual-pipeline-stage
  int virtual_stages = 0;          // --num-virtual-stages-per-pipeline-rank (what `export --to megatron` writes)
  std::string pipeline_layout;     // --pipeline-model-parallel-layout (export --to megatron's uneven split)
  std::string recompute_method;    // --recompute-method (full recompute: uniform, as llm/ counts it)
  int recompute_layers = 0;        // --recompute-num-layers (full recompute: 1, as llm/ counts it)
  bool bf16 = false, no_overlap_p2p = false;  // --bf16 (= --precision bf16-mixed), --no-overlap-p2p-communication
  std::string sharding, recompute = "none", precision = "bf16-mixed", framework = "megatron";
  std::string schedule;            // --schedule (empty: Megatron's, 1f1b or interleaved by v)
  bool distributed_optimizer = false;
  std::string plan;                // a v2 plan's "layout" instead of the layout flags
  std::vector<std::string> model_flags_given;  // the model flags on the command line, in order
  bool framework_given = false;    // --framework on the command line (a v3 plan's own must then agree)
  std::string attention_backend = "flash";  // --attention-backend flash | fused | auto | unfused | local
  std::string fp8_format, fp8_recipe;       // --fp8-format hybrid | e4m3, --fp8-recipe (llm/layout.h Fp8Recipe)
  bool tp_comm_overlap = false, eager = false;  // --tp-comm-overlap, --eager
};

struct LayoutFlagsUse {
  bool gpus_required = false;          // llm-memory: yes; llm-time: 0 means t cp p
  bool global_batch_required = false;  // llm-memory: yes; llm-time: b x p x d by default
  bool plan_file = false;              // offer --plan (llm-memory)
};

// --hf-config, --num-layers, --hidden-size, ... (none required by CLI11: job_from_flags
// asks for --hf-config or --num-layers, and validate_layout names any missing field).
void add_model_flags(CLI::App* cmd, LlmFlags& f);
// --gpus, --tensor-model-parallel-size, --sequence-parallel, --context-parallel-size,
// --expert-model-parallel-size, --pipeline-model-parallel-size,
// --num-layers-per-virtual-pipeline-stage (or --num-virtual-stages-per-pipeline-rank),
// --micro-batch-size, --global-batch-size, --recompute-granularity (with --recompute-method
// uniform and --recompute-num-layers 1 under full), --use-distributed-optimizer, --sharding,
// --framework, --precision (or --bf16), --order, --schedule, and
// --no-overlap-p2p-communication (no memory or time of llm/'s changes): every flag
// `export --to megatron` writes for a layout with an even cut, so its output reads back.
void add_layout_flags(CLI::App* cmd, LlmFlags& f, const LayoutFlagsUse& use);

// The shape of the config and the model flags, vocabulary not yet padded.
TransformerShape shape_from_flags(const LlmFlags& f);
Framework framework_from_flags(const LlmFlags& f);
// --framework's value, or InputError naming the flag and the three names.
Framework framework_flag(const std::string& name);
// --schedule by pipescope's name (nullopt when not given); throws InputError naming it.
std::optional<ScheduleKind> schedule_from_flags(const std::string& name);

struct LlmJob {
  TransformerShape shape;          // vocabulary padded for the layout's t
  ParallelLayout layout;           // validated
  Framework framework = Framework::Megatron;
  int gpus = 0;
  int global_batch = 0;
  std::vector<std::string> notes;  // what validate_layout changed, as Megatron changes it
};
LlmJob job_from_flags(const LlmFlags& f, const LayoutFlagsUse& use);
// The Job (llm/job.h) of flags already checked: the model's source is --hf-config, the
// cluster the GPU file --gpu names.
Job job_of(const LlmJob& job, const LlmFlags& f, const std::string& gpu_name, const GpuModel& gpu);

// gpu_file_path and load_gpu (a --gpu value to its GPU file): llm/gpu_model.h.

}  // namespace pipescope::cli
