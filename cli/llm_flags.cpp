// The flags of cli/llm_flags.h. Only what CLI11 cannot say is checked here (the names of
// enums, the global batch against b x d, the virtual stages against the layers of a
// rank); every fact about a layout is validate_layout's.
#include "cli/llm_flags.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "core/error.h"
#include "interop/export.h"
#include "interop/hf_config.h"
#include "interop/hf_profile.h"
#include "llm/framework.h"
#include "llm/plan_layout.h"

namespace pipescope::cli {

namespace {

template <typename Enum>
Enum parse(const std::string& flag, const std::string& name, std::optional<Enum> value, const std::string& choices) {
  if (!value) throw InputError(flag + ": expected " + choices + ", got \"" + name + "\"");
  return *value;
}

void positive(const std::string& flag, int value) {
  if (value < 1) throw InputError(flag + ": expected a positive integer, got " + std::to_string(value));
}

// The layout from the flags: d from the GPU count, v from the layers per virtual stage,
// M from the global batch, the enums by name.
ParallelLayout layout_of_flags(const LlmFlags& f, const TransformerShape& s, const LayoutFlagsUse& use, int& gpus,
                               int& global_batch) {
  ParallelLayout l = f.layout;
  positive("--tensor-model-parallel-size", l.t);
  positive("--context-parallel-size", l.cp);
  positive("--pipeline-model-parallel-size", l.p);
  positive("--micro-batch-size", l.micro_batch);
  if (f.gpus < 0 || (use.gpus_required && f.gpus == 0)) positive("--gpus", f.gpus);
  // validate_layout's ranges, before the products below are formed (each <= 2^20 x 2^20 x 2^20)
  for (auto [flag, value] : {std::pair{"--tensor-model-parallel-size", l.t}, {"--context-parallel-size", l.cp},
                             {"--pipeline-model-parallel-size", l.p}, {"--gpus", std::max(f.gpus, 1)}}) {
    check_range(flag, value, 1, kMaxGpus);
  }
  check_range("--micro-batch-size", l.micro_batch, 1, kMaxBatch);
  // 0 is "not given" for these two; a negative value is an error, never "not given"
  check_range("--num-layers-per-virtual-pipeline-stage", f.layers_per_virtual, 0, kMaxLayers);
  check_range("--num-virtual-stages-per-pipeline-rank", f.virtual_stages, 0, kMaxVirtualStages);
  const int64_t model = static_cast<int64_t>(l.t) * l.cp * l.p;
  if (f.gpus == 0 && model > kMaxGpus) {
    throw InputError("--gpus: t * cp * p = " + std::to_string(model) + " GPUs, beyond " + std::to_string(kMaxGpus));
  }
  gpus = f.gpus > 0 ? f.gpus : static_cast<int>(model);
  l.d = static_cast<int>(std::max<int64_t>(1, gpus / model));
  if (f.virtual_stages > 0 && f.layers_per_virtual > 0) {
    throw InputError("--num-virtual-stages-per-pipeline-rank and --num-layers-per-virtual-pipeline-stage: give one");
  }
  if (f.virtual_stages > 0) l.v = f.virtual_stages;
  if (f.layers_per_virtual > 0) {
    if (l.p < 1 || s.layers % l.p != 0 || (s.layers / l.p) % f.layers_per_virtual != 0) {
      throw InputError("--num-layers-per-virtual-pipeline-stage: " + std::to_string(f.layers_per_virtual) +
                       " does not divide the " + std::to_string(s.layers) + " / p layers of a pipeline rank");
    }
    l.v = s.layers / l.p / f.layers_per_virtual;
  }
  if (!f.pipeline_layout.empty()) {  // the stages' layers, v their count / p (the layout states v itself)
    if (f.virtual_stages > 0 || f.layers_per_virtual > 0) {
      throw InputError("--pipeline-model-parallel-layout states v itself: give it without "
                       "--num-virtual-stages-per-pipeline-rank or --num-layers-per-virtual-pipeline-stage");
    }
    const std::vector<int> stages = megatron_layout_decoders(f.pipeline_layout);
    if (l.p < 1 || stages.size() % static_cast<std::size_t>(l.p) != 0) {
      throw InputError("--pipeline-model-parallel-layout: " + std::to_string(stages.size()) +
                       " stages are not a multiple of --pipeline-model-parallel-size " + std::to_string(l.p));
    }
    l.v = static_cast<int>(stages.size()) / l.p;
    l.layers_per_chunk = stages;
  }
  // --use-distributed-optimizer is --sharding distributed-optimizer: beside another sharding it contradicts it
  if (f.distributed_optimizer && !f.sharding.empty() && f.sharding != "distributed-optimizer") {
    throw InputError("--use-distributed-optimizer and --sharding " + f.sharding +
                     ": give one (--use-distributed-optimizer is --sharding distributed-optimizer)");
  }
  const std::string sharding =
      f.sharding.empty() ? (f.distributed_optimizer ? "distributed-optimizer" : "none") : f.sharding;
  l.sharding = parse("--sharding", sharding, sharding_from_name(sharding), "none, distributed-optimizer, zero-1..3");
  l.recompute = parse("--recompute-granularity", f.recompute, recompute_from_name(f.recompute), "none, selective, full");
  // llm/memory.h counts full recompute as Megatron's uniform method over 1 layer: each layer from its own input.
  if (!f.recompute_method.empty() && (l.recompute != Recompute::Full || f.recompute_method != "uniform")) {
    throw InputError("--recompute-method: llm/ counts --recompute-granularity full with uniform, got \"" +
                     f.recompute_method + "\" with " + f.recompute);
  }
  if (f.recompute_layers != 0 && (l.recompute != Recompute::Full || f.recompute_layers != 1)) {
    throw InputError("--recompute-num-layers: llm/ counts --recompute-granularity full with 1 layer per unit, got " +
                     std::to_string(f.recompute_layers) + " with " + f.recompute);
  }
  if (f.bf16 && f.precision != "bf16-mixed") {
    throw InputError("--bf16 and --precision " + f.precision + ": give one");
  }
  l.precision = parse("--precision", f.precision, precision_recipe_from_name(f.precision), "bf16-mixed, fp32, fp8-params");
  l.schedule = schedule_from_flags(f.schedule);
  l.attention = attention_kernel_from_flag(f.attention_backend);
  l.fp8 = fp8_recipe_from_flags(f.fp8_format, f.fp8_recipe);
  l.tp_comm_overlap = f.tp_comm_overlap;
  l.fused_elementwise = !f.eager;
  const int64_t per_step = static_cast<int64_t>(l.micro_batch) * l.d;
  const int64_t batch = f.global_batch == 0 && !use.global_batch_required ? per_step * l.p : f.global_batch;
  if (batch > kMaxBatch) check_range("--global-batch-size", batch, 1, kMaxBatch);  // below 1: the message below
  global_batch = static_cast<int>(batch);
  if (global_batch < 1 || global_batch % per_step != 0) {
    throw InputError("--global-batch-size: expected a positive multiple of --micro-batch-size x d = " +
                     std::to_string(l.micro_batch) + " x " + std::to_string(l.d) + ", got " +
                     std::to_string(global_batch));
  }
  l.microbatches = static_cast<int>(global_batch / per_step);
  return l;
}

}  // namespace

void add_model_flags(CLI::App* cmd, LlmFlags& f) {
  const std::size_t before = cmd->get_options().size();
  cmd->add_option("--hf-config", f.hf_config, "Hugging Face config.json (llama, mistral, qwen2, gemma, mixtral)");
  cmd->add_option("--num-layers", f.shape.layers, "transformer layers L (overrides the config)");
  cmd->add_option("--hidden-size", f.shape.hidden, "hidden size h");
  cmd->add_option("--num-attention-heads", f.shape.heads, "attention heads a");
  cmd->add_option("--num-query-groups", f.shape.kv_heads, "KV heads (GQA); default: a");
  cmd->add_option("--kv-channels", f.shape.kv_channels, "head dimension; default h / a");
  cmd->add_option("--ffn-hidden-size", f.shape.ffn_hidden, "FFN width f; default 4 h, or Megatron's 8/3 h with --swiglu");
  cmd->add_flag("--swiglu", f.swiglu, "three FFN matrices (Llama)");
  cmd->add_flag("--disable-bias-linear", f.disable_bias, "no biases in the linear layers");
  cmd->add_option("--normalization", f.normalization, "LayerNorm | RMSNorm (default LayerNorm; HF configs RMSNorm)");
  cmd->add_flag("--untie-embeddings-and-output-weights", f.untie, "the output layer has its own weights");
  cmd->add_option("--seq-length", f.shape.sequence, "sequence length s (required with --hf-config)");
  cmd->add_option("--vocab-size", f.shape.vocabulary, "vocabulary V before padding");
  cmd->add_option("--make-vocab-size-divisible-by", f.vocab_divisible_by, "pads V to a multiple of this x t")
      ->capture_default_str();
  cmd->add_option("--num-experts", f.shape.experts, "MoE experts (0: dense)");
  cmd->add_option("--moe-router-topk", f.shape.moe_topk, "experts per token");
  cmd->add_option("--moe-ffn-hidden-size", f.shape.moe_ffn_hidden, "an expert's FFN width (default f)");
  cmd->add_option("--moe-layer-freq", f.shape.moe_layer_frequency, "every k-th layer is MoE")->capture_default_str();
  cmd->add_option("--moe-shared-expert-intermediate-size", f.shape.shared_expert_ffn_hidden,
                  "a shared expert's FFN width (0: none)");
  cmd->add_flag("--add-qkv-bias", f.add_qkv_bias, "q, k and v carry biases under --disable-bias-linear (Qwen2)");
  cmd->add_option("--position-embedding-type", f.position_embedding,
                  "rope | learned_absolute (an s x h position table); default: the config's, else rope");
  // Read so that an export reads back; pipescope's counts do not depend on them.
  cmd->add_flag("--group-query-attention", f.group_query_attention, "Megatron's GQA switch (--num-query-groups counts)");
  cmd->add_option("--max-position-embeddings", f.max_position_embeddings, "Megatron's RoPE / position table length");
  cmd->add_option("--rotary-base", f.rotary_base, "RoPE base (numerics only)");
  cmd->add_option("--norm-epsilon", f.norm_epsilon, "norm epsilon (numerics only)");
  cmd->add_option("--init-method-std", f.init_method_std, "initialisation std (numerics only)");
  cmd->add_flag("--use-rope-scaling", f.use_rope_scaling, "Llama 3.1 RoPE scaling (numerics only)");
  cmd->add_option("--rope-scaling-factor", f.rope_scaling_factor, "with --use-rope-scaling (numerics only)");
  cmd->add_option("--moe-token-dispatcher-type", f.moe_token_dispatcher,
                  "alltoall (the all-to-alls pipescope times; others refused)");
  // every model flag given is recorded: a version 3 plan's model is the plan's (job_from_flags)
  const std::vector<CLI::Option*> options = cmd->get_options();
  for (std::size_t i = before; i < options.size(); ++i) {
    const std::string name = options[i]->get_name();
    options[i]->each([&f, name](const std::string&) { f.model_flags_given.push_back(name); });
  }
}

void add_layout_flags(CLI::App* cmd, LlmFlags& f, const LayoutFlagsUse& use) {
  CLI::Option* gpus = cmd->add_option("--gpus", f.gpus, "GPUs in the job (world size); d = gpus / (t cp p)");
  if (use.gpus_required && !use.plan_file) gpus->required();  // with --plan: a v3 plan's job has them
  cmd->add_option("--tensor-model-parallel-size", f.layout.t, "t")->capture_default_str();
  cmd->add_flag("--sequence-parallel", f.layout.sequence_parallel, "split norms and dropouts t ways (needs t > 1)");
  cmd->add_option("--context-parallel-size", f.layout.cp, "cp")->capture_default_str();
  cmd->add_option("--expert-model-parallel-size", f.layout.ep, "ep")->capture_default_str();
  cmd->add_option("--pipeline-model-parallel-size", f.layout.p, "p")->capture_default_str();
  cmd->add_option("--num-layers-per-virtual-pipeline-stage", f.layers_per_virtual,
                  "interleaving: v = L / (p x this) model chunks per pipeline rank");
  cmd->add_option("--pipeline-model-parallel-layout", f.pipeline_layout,
                  "the stages' layers in Megatron-LM's form (E|t*N|...|t*NL, what export --to megatron writes for "
                  "an uneven split): p x v stages");
  cmd->add_option("--num-virtual-stages-per-pipeline-rank", f.virtual_stages, "interleaving: v model chunks per "
                  "pipeline rank (Megatron-Core's name; or --num-layers-per-virtual-pipeline-stage)");
  cmd->add_option("--micro-batch-size", f.layout.micro_batch, "b")->capture_default_str();
  cmd->add_option("--global-batch-size", f.global_batch,
                  use.global_batch_required ? "b x M x d" : "samples per step (default: b x p x d)");
  cmd->add_option("--recompute-granularity", f.recompute, "none | selective | full")->capture_default_str();
  cmd->add_option("--recompute-method", f.recompute_method, "with full: uniform (each layer from its input)");
  cmd->add_option("--recompute-num-layers", f.recompute_layers, "with full and uniform: 1");
  cmd->add_flag("--bf16", f.bf16, "bf16 mixed precision (= --precision bf16-mixed, the default)");
  cmd->add_flag("--no-overlap-p2p-communication", f.no_overlap_p2p,
                "Megatron-LM's interleaved schedule with blocking p2p (default: each p2p posted ahead and waited on "
                "before the op that needs it; 1f1b, torch and DeepSpeed always block)");
  cmd->add_flag("--use-distributed-optimizer", f.distributed_optimizer, "shard the optimizer state over d cp");
  cmd->add_option("--sharding", f.sharding, "none | distributed-optimizer | zero-1 | zero-2 | zero-3 | fsdp");
  cmd->add_option("--framework", f.framework, "megatron | torch | deepspeed (the shardings it offers)")
      ->capture_default_str()
      ->each([&f](const std::string&) { f.framework_given = true; });
  cmd->add_option("--precision", f.precision, "bf16-mixed | fp32 | fp8-params")->capture_default_str();
  cmd->add_option("--order", f.layout.order, "rank order of the groups (the first share a node)")->capture_default_str();
  cmd->add_option("--attention-backend", f.attention_backend,
                  "flash (fused: FlashAttention, cuDNN, TE, SDPA; also fused, auto) | unfused (also local: the s x s "
                  "scores as GEMMs and kept, Korthikanti et al.'s accounting)")
      ->capture_default_str();
  cmd->add_option("--fp8-format", f.fp8_format, "hybrid | e4m3: fp8 linears (Megatron-LM; the recipe defaults to delayed)");
  cmd->add_option("--fp8-recipe", f.fp8_recipe,
                  "delayed | tensorwise | rowwise | mxfp8: the linears' fp8 scaling (Transformer Engine, torchao)");
  cmd->add_flag("--tp-comm-overlap", f.tp_comm_overlap,
                "overlap TP collectives with their GEMMs (Megatron-LM --tp-comm-overlap, torchtitan async TP; needs SP)");
  cmd->add_flag("--eager", f.eager,
                "elementwise ops as eager PyTorch runs them, one kernel per op (torchtitan without compile); default: "
                "fused (Megatron / Transformer Engine kernels, torch.compile)");
  cmd->add_option("--schedule", f.schedule,
                  "pipeline schedule: gpipe | 1f1b | interleaved | looped-bfs | interleaved-zb | zb-v | dualpipev "
                  "(default: 1f1b, interleaved with virtual stages)");
  if (use.plan_file) {
    CLI::Option* plan = cmd->add_option("--plan", f.plan, "a v2 plan file: take the layout from its \"layout\" (then no layout flags); "
                    "a v3 plan without model flags: take its whole job (model, layout, framework)");
    // The plan's layout is the layout: a layout flag beside it would be silently dropped (--gpus is
    // checked against a v3 plan's job; a v2 plan's framework is --framework's).
    for (const char* name : {"--tensor-model-parallel-size", "--sequence-parallel", "--context-parallel-size",
                             "--expert-model-parallel-size", "--pipeline-model-parallel-size",
                             "--num-layers-per-virtual-pipeline-stage", "--num-virtual-stages-per-pipeline-rank",
                             "--pipeline-model-parallel-layout",
                             "--micro-batch-size", "--global-batch-size", "--recompute-granularity",
                             "--recompute-method", "--recompute-num-layers", "--bf16", "--no-overlap-p2p-communication",
                             "--use-distributed-optimizer", "--sharding", "--precision", "--order", "--schedule",
                             "--attention-backend", "--fp8-format", "--fp8-recipe", "--tp-comm-overlap", "--eager"}) {
      plan->excludes(cmd->get_option(name));
    }
  }
}

// The flags pipescope reads only so that an export reads back: in range, and not
// contradicting the model (a dispatcher other than the all-to-all timed; a position table
// shorter than the sequence).
namespace {

void check_megatron_numerics(const LlmFlags& f, const TransformerShape& s) {
  for (auto [name, value] : {std::pair{"--rotary-base", f.rotary_base}, {"--norm-epsilon", f.norm_epsilon},
                             {"--init-method-std", f.init_method_std}, {"--rope-scaling-factor", f.rope_scaling_factor}}) {
    if (!std::isfinite(value) || value < 0) {
      throw InputError(std::string(name) + ": expected a positive number, got " + std::to_string(value));
    }
  }
  if (f.rope_scaling_factor > 0 && !f.use_rope_scaling) {
    throw InputError("--rope-scaling-factor: given without --use-rope-scaling, which it applies to");
  }
  if (f.max_position_embeddings < 0) positive("--max-position-embeddings", f.max_position_embeddings);
  if (f.max_position_embeddings > 0 && s.sequence > f.max_position_embeddings) {
    throw InputError("--max-position-embeddings: " + std::to_string(f.max_position_embeddings) +
                     " is shorter than --seq-length " + std::to_string(s.sequence));
  }
  if (!f.moe_token_dispatcher.empty() && f.moe_token_dispatcher != "alltoall") {
    throw InputError("--moe-token-dispatcher-type: pipescope times the all-to-all dispatcher (alltoall), got \"" +
                     f.moe_token_dispatcher + "\"");
  }
}

}  // namespace

// The config's fields, then any model flag given on the command line over them.
TransformerShape shape_from_flags(const LlmFlags& f) {
  if (f.hf_config.empty() && f.shape.layers == 0) throw InputError("--hf-config or --num-layers: one is required");
  TransformerShape s;
  if (!f.hf_config.empty()) {
    s = load_hf_model(f.hf_config).shape;
  } else {
    s.rms_norm = false, s.tied_embeddings = true;
  }
  const TransformerShape& g = f.shape;
  for (auto [to, from] : {std::pair{&s.layers, g.layers}, {&s.hidden, g.hidden}, {&s.heads, g.heads},
                          {&s.kv_heads, g.kv_heads}, {&s.kv_channels, g.kv_channels}, {&s.ffn_hidden, g.ffn_hidden},
                          {&s.sequence, g.sequence}, {&s.vocabulary, g.vocabulary}, {&s.experts, g.experts},
                          {&s.moe_topk, g.moe_topk}, {&s.moe_ffn_hidden, g.moe_ffn_hidden},
                          {&s.shared_expert_ffn_hidden, g.shared_expert_ffn_hidden}}) {
    if (from != 0) *to = from;
  }
  s.moe_layer_frequency = g.moe_layer_frequency;
  if (f.swiglu) s.swiglu = true;
  if (f.disable_bias) s.bias_linear = false, s.qkv_bias = false, s.output_bias = false, s.mlp_bias = false;
  if (f.add_qkv_bias) s.qkv_bias = true;
  if (f.untie) s.tied_embeddings = false;
  if (f.position_embedding == "rope" || f.position_embedding == "learned_absolute") {
    s.learned_positions = f.position_embedding == "learned_absolute";
  } else if (!f.position_embedding.empty()) {
    throw InputError("--position-embedding-type: expected rope or learned_absolute, got \"" + f.position_embedding + "\"");
  }
  check_megatron_numerics(f, s);
  if (f.normalization == "RMSNorm" || f.normalization == "LayerNorm") {
    s.rms_norm = f.normalization == "RMSNorm";
  } else if (!f.normalization.empty()) {
    throw InputError("--normalization: expected LayerNorm or RMSNorm, got \"" + f.normalization + "\"");
  }
  if (f.vocab_divisible_by < 1) positive("--make-vocab-size-divisible-by", f.vocab_divisible_by);
  if (s.name.empty()) s.name = "megatron-flags";
  return s;
}

Framework framework_from_flags(const LlmFlags& f) { return framework_flag(f.framework); }

Framework framework_flag(const std::string& name) {
  const std::optional<Framework> framework = framework_from_name(name);
  if (!framework) throw InputError("--framework: expected megatron, torch or deepspeed, got \"" + name + "\"");
  return *framework;
}

std::optional<ScheduleKind> schedule_from_flags(const std::string& name) {
  if (name.empty()) return std::nullopt;
  try {
    return parse_schedule_kind(name);
  } catch (const InputError& e) {
    throw InputError(std::string("--schedule: ") + e.what());
  }
}

LlmJob job_from_flags(const LlmFlags& f, const LayoutFlagsUse& use) {
  LlmJob job;
  const std::optional<Plan> plan = f.plan.empty() ? std::nullopt : std::optional<Plan>(load_plan(f.plan));
  if (plan && plan->job) {  // a v3 plan's job, whole: its model is the plan's, not the flags'
    if (!f.model_flags_given.empty()) {
      throw InputError(f.model_flags_given.front() + ": --plan " + f.plan + " is a version 3 plan, which holds the "
                       "whole job (its model is job.model.shape); give no model flag with it, or a version 2 plan "
                       "(a layout without a job) to lay out the flags' model");
    }
    if (const std::optional<Job> whole = plan_job(*plan)) {
      if (f.gpus != 0 && f.gpus != whole->layout.gpus()) {
        throw InputError("--gpus " + std::to_string(f.gpus) + ": " + f.plan + " holds a job of " +
                         std::to_string(whole->layout.gpus()) + " GPUs");
      }
      if (f.framework_given && framework_flag(f.framework) != whole->framework) {
        throw InputError("--framework " + f.framework + ": " + f.plan + " holds a job for " +
                         to_string(whole->framework));
      }
      job.shape = whole->shape, job.layout = whole->layout, job.framework = whole->framework;
      job.gpus = whole->layout.gpus(), job.global_batch = whole->layout.global_batch();
      return job;
    }
  }
  if (use.gpus_required && f.gpus == 0 && !plan) positive("--gpus", f.gpus);
  job.shape = shape_from_flags(f);
  if (plan) {
    const std::optional<ParallelLayout> from = plan_layout(*plan);
    if (!from) throw InputError(f.plan + ": layout: missing (a version 2 plan with a \"layout\" is expected)");
    job.layout = *from;
    job.gpus = f.gpus != 0 ? f.gpus : from->gpus();  // --gpus, when given, is checked against t cp d p
    job.global_batch = from->global_batch();
  } else {
    job.layout = layout_of_flags(f, job.shape, use, job.gpus, job.global_batch);
  }
  if (job.shape.vocabulary > 0) {
    job.shape.vocabulary = padded_vocabulary(job.shape.vocabulary, job.layout.t, f.vocab_divisible_by);
  }
  job.framework = framework_from_flags(f);
  Job checked;
  checked.shape = job.shape, checked.layout = job.layout, checked.framework = job.framework;
  validate_job(checked, job.gpus, &job.notes);
  job.layout = checked.layout;
  return job;
}

Job job_of(const LlmJob& job, const LlmFlags& f, const std::string& gpu_name, const GpuModel& gpu) {
  Job out;
  out.shape = job.shape;
  out.model_source = f.hf_config;
  out.cluster = {gpu_name, gpu.gpus_per_node()};
  out.layout = job.layout;
  out.framework = job.framework;
  return out;
}

}  // namespace pipescope::cli
