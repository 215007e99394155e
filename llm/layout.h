// The LLM-scale vocabulary: a decoder-only transformer's shape and how one training
// job lays it out over GPUs. Words and flags are Megatron-LM's:
//   t  --tensor-model-parallel-size      sp --sequence-parallel (needs t > 1 to matter)
//   cp --context-parallel-size           ep --expert-model-parallel-size (MoE layers)
//   d  data-parallel size (what is left) p  --pipeline-model-parallel-size
//   v  virtual stages (model chunks) per pipeline rank (--num-layers-per-virtual-pipeline-stage)
//   schedule  the pipeline schedule (pipescope's names, core/schedule.h); unset: Megatron's
//      1f1b, or interleaved when v > 1 (llm/pipeline_schedule.h says which kinds llm/ times)
// Invariant: a layout that passed validate_layout has t * cp * d * p == gpus, t divides
// the attention heads and the KV heads' groups as Megatron requires, ep divides the
// experts and d * cp, cp splits the sequence into 2 * cp chunks, and the layers fill the
// p * v chunks (evenly, or as layers_per_chunk says). Code in llm/ may assume it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/recompute.h"
#include "core/schedule.h"

namespace pipescope {

// A GPT / Llama / Mixtral-shaped decoder: what theoretical_memory_usage.py and
// Korthikanti et al. (2022) take as inputs.
struct TransformerShape {
  std::string name;
  int layers = 0;              // L, --num-layers
  int hidden = 0;              // h, --hidden-size
  int heads = 0;               // a, --num-attention-heads
  int kv_heads = 0;            // --num-query-groups (GQA); 0 or == heads: multi-head attention
  int ffn_hidden = 0;          // --ffn-hidden-size (0: 4 h, or 8/3 h rounded as Megatron does for SwiGLU)
  bool swiglu = false;         // --swiglu: three FFN matrices instead of two
  bool bias_linear = true;     // false: --disable-bias-linear
  int vocabulary = 0;          // V, padded as Megatron pads (--make-vocab-size-divisible-by x t)
  int sequence = 0;            // s, --seq-length
  bool tied_embeddings = true; // false: --untie-embeddings-and-output-weights
  bool rms_norm = false;       // --normalization RMSNorm (h weights) instead of LayerNorm (2 h)
  bool qkv_bias = false;       // --add-qkv-bias: q, k, v carry biases even with bias_linear off (Qwen2)
  bool output_bias = false;    // the attention output projection carries a bias even with bias_linear off
                               // (Hugging Face llama / gemma attention_bias: q, k, v and o)
  bool mlp_bias = false;       // the MLP's linears carry biases even with bias_linear off (llama mlp_bias)
  bool learned_positions = false;  // --position-embedding-type learned_absolute: an s x h position table
                                   // beside the word embedding (false: rope, no parameters; what
                                   // theoretical_memory_usage.py counts)
  bool embedding_dropout = true;   // the embedding keeps its 1-byte dropout mask, s b h (Megatron's hidden
                                   // dropout; theoretical_memory_usage.py counts it)
  int kv_channels = 0;         // --kv-channels, the head dimension (0: h / a)
  // Mixture of experts (experts == 0: dense).
  int experts = 0;             // --num-experts
  int moe_topk = 0;            // --moe-router-topk
  int moe_ffn_hidden = 0;      // --moe-ffn-hidden-size (0: ffn_hidden)
  int moe_layer_frequency = 1; // every k-th layer is an MoE layer (--moe-layer-freq)
  int shared_expert_ffn_hidden = 0;  // --moe-shared-expert-intermediate-size (0: none)
};

// How the data-parallel group shards what it replicates.
enum class Sharding : uint8_t {
  None,                  // every data-parallel rank keeps everything
  DistributedOptimizer,  // ZeRO-1: optimizer state / d (Megatron --use-distributed-optimizer)
  Zero2,                 // + gradients / d (DeepSpeed ZeRO stage 2)
  Zero3,                 // + parameters / d (DeepSpeed ZeRO-3, torch FSDP FULL_SHARD)
};
std::string to_string(Sharding sharding);  // "none", "distributed-optimizer", "zero-2", "zero-3"
std::optional<Sharding> sharding_from_name(const std::string& name);  // also "zero-1"

// Bytes kept per parameter: the weights as the model holds them, the gradients as
// they are accumulated and reduced, and the optimizer's state (Adam: master weights,
// m and v). Megatron's --bf16 default is 2 + 4 + 12 = 18.
struct Precision {
  int parameter_bytes = 2;
  int gradient_bytes = 4;
  int optimizer_bytes = 12;
  int per_parameter() const { return parameter_bytes + gradient_bytes + optimizer_bytes; }
};
enum class PrecisionRecipe : uint8_t { Bf16Mixed, Fp32, Fp8Params };
std::string to_string(PrecisionRecipe recipe);  // "bf16-mixed", "fp32", "fp8-params"
std::optional<PrecisionRecipe> precision_recipe_from_name(const std::string& name);
Precision precision_of(PrecisionRecipe recipe);
// A recipe's bytes as a profile's static memory counts them (core/plan.h: parameter bytes
// x (2 + optimizer_state_factor), the weights and their gradients at the weights' width):
// (gradient + optimizer) / parameter - 1, so 18 bytes per 2-byte weight is 7 (the
// default 2 keeps 8).
double optimizer_state_factor(const Precision& precision);

struct ParallelLayout {
  int t = 1;
  bool sequence_parallel = false;
  int cp = 1;
  int ep = 1;
  int d = 1;
  int p = 1;
  int v = 1;
  Sharding sharding = Sharding::None;
  Recompute recompute = Recompute::None;  // --recompute-granularity (core/recompute.h; full: each layer from its input)
  int micro_batch = 1;                 // b, --micro-batch-size
  int microbatches = 1;                // M per pipeline per step: global batch = b * M * d
  std::vector<int> layers_per_chunk;   // empty: L / (p v) each; else p * v entries, in pipeline order
  PrecisionRecipe precision = PrecisionRecipe::Bf16Mixed;
  std::string order = "tp-cp-ep-dp-pp";  // Megatron's --rank order: the first groups share a node
  // The pipeline schedule; unset: Megatron's (1f1b, interleaved when v > 1). V-shapes
  // (zb-v, dualpipev) put chunk c on rank c < p ? c : 2p-1-c (llm/pipeline_schedule.h).
  std::optional<ScheduleKind> schedule;
  // The data-parallel overlap the job runs with (llm/step_time.h's StepOptions; Megatron's
  // --overlap-grad-reduce / --overlap-param-gather, DeepSpeed's overlap_comm; torch's DDP and
  // FSDP2 overlap by design). llm/framework.h's framework_overlap sets what the framework does.
  bool overlap_grad_reduce = false;
  bool overlap_param_gather = false;
  // Megatron-LM's --overlap-p2p-communication (on by default; --no-overlap-p2p-communication
  // turns it off), which only its interleaved schedule uses: each p2p is posted ahead and
  // waited on before the op that needs it (the simulator's overlapped p2p, core/p2p.h).
  // Off, and always for 1f1b and the other frameworks' runtimes: blocking p2p.
  bool overlap_p2p = false;

  int gpus() const { return t * cp * d * p; }
  int global_batch() const { return micro_batch * microbatches * d; }
};

}  // namespace pipescope
