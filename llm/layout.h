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

// The attention kernel a layout runs (Megatron-LM's --attention-backend, torch's SDPA backend):
//   flash    fused (FlashAttention-2/3, cuDNN, Transformer Engine, SDPA's flash, efficient
//            and cudnn backends): the s x s scores live only on chip. The forward keeps Q,
//            K, V, the output and the softmax statistics (4 bytes per head and token), the
//            backward recomputes the scores inside the kernel, causal masking skips the
//            masked blocks; timed at the GPU file's own attention curve (llm/gpu_model.h).
//   unfused  Korthikanti et al. (2022)'s accounting: Q K^T and the product with V are
//            batched GEMMs, softmax and dropout memory-bound ops over the s x s scores,
//            which the stash keeps (5 a s^2 b bytes a layer without recompute).
enum class AttentionKernel : uint8_t { Flash, Unfused };
std::string to_string(AttentionKernel kernel);  // "flash", "unfused"
// Also Megatron-LM's --attention-backend names: fused, auto (flash), local (unfused).
std::optional<AttentionKernel> attention_kernel_from_name(const std::string& name);

// Which of a transformer layer's GEMMs run in fp8 and how they are scaled: the linears
// (QKV, output projection, the MLP's, the experts') in fp8; the attention core, norms,
// router, embedding and output layer stay bf16, as Transformer Engine's fp8_autocast and
// torchao's Float8 converter (which skips torchtitan's "output") leave them. One record a
// recipe (fp8_recipe_info, llm/layout.cpp): its names, the GEMM class the GPU file times
// it with, and the bytes its casts move.
enum class Fp8Recipe : uint8_t { None, Delayed, Tensorwise, Rowwise, Mxfp8 };
enum class GemmClass : uint8_t { Bf16, Fp8TensorScaled, Fp8RowScaled, Mxfp8 };
struct Fp8RecipeInfo {
  Fp8Recipe recipe = Fp8Recipe::None;
  const char* name = "none";             // pipescope's name: none, delayed, tensorwise, rowwise, mxfp8
  const char* megatron = "";             // --fp8-recipe (with --fp8-format hybrid); "" where Megatron has none
  const char* torchao = "";              // torchtitan --float8.recipe_name; "" where torchao has none
  GemmClass gemm = GemmClass::Bf16;      // the GPU file's GEMM class (llm/gpu_model.h)
  // Bytes the casts move per element of a linear's x (m k), W (n k) and dy (m n), per
  // micro-batch, summed over its three GEMMs (forward, input gradient, weight gradient):
  // delayed 4 (Transformer Engine casts each tensor once, amax fused, writing the fp8 copy
  // and its transpose: read 2, write 1 + 1); tensorwise 8 (torchao: an amax pass reads each
  // tensor, 2, and each of the six operands is cast, read 2 and write 1, 2 x 3); rowwise 10
  // (each operand scaled along its own rows: amax 2 + cast 3, twice per tensor); mxfp8 4
  // (per-32-element block scales computed in the cast, as delayed).
  double cast_bytes = 0;
  const char* source = "";
};
const Fp8RecipeInfo& fp8_recipe_info(Fp8Recipe recipe);
std::string to_string(Fp8Recipe recipe);
std::optional<Fp8Recipe> fp8_recipe_from_name(const std::string& name);  // also "bf16" for none
// Megatron-LM's flags: --fp8-format (hybrid | e4m3) turns fp8 on and --fp8-recipe picks the
// scaling, delayed by default; --fp8-recipe alone (torchao's names) also turns it on; both
// empty: none. Throws InputError naming the flag.
Fp8Recipe fp8_recipe_from_flags(const std::string& fp8_format, const std::string& fp8_recipe);
// fp8 parameters (--fp8-param-gather) run fp8 GEMMs: the recipe given, else delayed (Megatron-LM's
// default --fp8-recipe; arguments.py requires an fp8 format with --fp8-param-gather).
Fp8Recipe implied_fp8(PrecisionRecipe precision, Fp8Recipe fp8);
// --attention-backend's value; throws InputError naming the flag.
AttentionKernel attention_kernel_from_flag(const std::string& backend);

// What torch's selective recompute keeps versus Megatron-LM's: one record each, set from
// the job's framework (validate_job). Megatron-LM --recompute-granularity selective
// (--recompute-modules core_attn): the attention core is recomputed; torchtitan's per-op
// selective AC (torchtitan/distributed/activation_checkpoint.py _save_list with its
// mm_count policy): the outputs of every other matmul and of SDPA are saved, the rest of
// the layer (the other matmuls: k, the output projection and the MLP's up projection w3;
// the norms, RoPE and the activation) is recomputed.
enum class SelectivePolicy : uint8_t { CoreAttention, EveryOtherMatmul };

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
  AttentionKernel attention = AttentionKernel::Flash;  // every framework's default today
  Fp8Recipe fp8 = Fp8Recipe::None;                     // none: bf16 GEMMs
  // The tensor-parallel collectives overlapped with the GEMMs they feed (Megatron-LM's
  // --tp-comm-overlap, Transformer Engine's userbuffers; torchtitan's async TP, which
  // decomposes each all-gather / reduce-scatter matmul into per-rank chunks).
  bool tp_comm_overlap = false;
  // Elementwise ops run fused (Megatron-LM / Transformer Engine's kernels, torch.compile),
  // or, false, as eager PyTorch runs a model's Python: one kernel per op (llm/layer_time.cpp
  // counts each op's bytes both ways).
  bool fused_elementwise = true;
  SelectivePolicy selective = SelectivePolicy::CoreAttention;  // the framework's (validate_job)

  int gpus() const { return t * cp * d * p; }
  int global_batch() const { return micro_batch * microbatches * d; }
};

// What the layout's kernels are, as every output that prints a step or memory names them:
// "attention flash, linears bf16" or "attention flash, linears fp8 tensorwise, elementwise eager".
std::string kernels_text(const ParallelLayout& layout);

}  // namespace pipescope
