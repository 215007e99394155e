// `pipescope llm-memory`: memory per GPU of each pipeline rank of an LLM-scale job
// (llm/memory.h), from a Hugging Face config.json or Megatron-LM's model flags, laid out
// by Megatron-LM's parallelism flags (or a v2 plan's "layout"). Prints a table, or with
// --json one pipescope.llm-memory object. Bad input exits 2 naming the flag.
#include <cstdio>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "core/error.h"
#include "interop/hf_config.h"
#include "llm/layout_check.h"
#include "llm/memory.h"
#include "llm/plan_layout.h"

namespace pipescope::cli {

namespace {

struct LlmMemoryArgs {
  std::string hf_config, plan, framework = "megatron", sharding, recompute = "none", precision = "bf16-mixed";
  TransformerShape shape;          // Megatron's model flags (0: from --hf-config)
  std::string normalization;       // LayerNorm | RMSNorm
  bool untie = false, disable_bias = false, swiglu = false, distributed_optimizer = false;
  int vocab_divisible_by = 128, layers_per_virtual = 0, gpus = 0, global_batch = 0;
  ParallelLayout layout;
  bool json = false;
};

void add_model_flags(CLI::App* cmd, LlmMemoryArgs& a) {
  cmd->add_option("--hf-config", a.hf_config, "Hugging Face config.json (llama, mistral, qwen2, gemma, mixtral)");
  cmd->add_option("--num-layers", a.shape.layers, "L (overrides the config)");
  cmd->add_option("--hidden-size", a.shape.hidden, "h");
  cmd->add_option("--num-attention-heads", a.shape.heads, "a");
  cmd->add_option("--num-query-groups", a.shape.kv_heads, "KV heads (GQA); default: a");
  cmd->add_option("--kv-channels", a.shape.kv_channels, "head dimension; default h / a");
  cmd->add_option("--ffn-hidden-size", a.shape.ffn_hidden, "f; default 4 h, or Megatron's 8/3 h with --swiglu");
  cmd->add_flag("--swiglu", a.swiglu, "three FFN matrices");
  cmd->add_flag("--disable-bias-linear", a.disable_bias, "no biases in the linear layers");
  cmd->add_option("--normalization", a.normalization, "LayerNorm | RMSNorm (default LayerNorm; HF configs RMSNorm)");
  cmd->add_flag("--untie-embeddings-and-output-weights", a.untie, "the output layer has its own weights");
  cmd->add_option("--seq-length", a.shape.sequence, "s (required with --hf-config)");
  cmd->add_option("--vocab-size", a.shape.vocabulary, "V before padding");
  cmd->add_option("--make-vocab-size-divisible-by", a.vocab_divisible_by, "pads V to a multiple of this x t")
      ->capture_default_str();
  cmd->add_option("--num-experts", a.shape.experts, "MoE experts (0: dense)");
  cmd->add_option("--moe-router-topk", a.shape.moe_topk, "experts per token");
  cmd->add_option("--moe-ffn-hidden-size", a.shape.moe_ffn_hidden, "each expert's f (default f)");
  cmd->add_option("--moe-layer-freq", a.shape.moe_layer_frequency, "every k-th layer is MoE")->capture_default_str();
}

void add_layout_flags(CLI::App* cmd, LlmMemoryArgs& a) {
  cmd->add_option("--gpus", a.gpus, "GPUs in the cluster; d = gpus / (t cp p)")->required();
  cmd->add_option("--tensor-model-parallel-size", a.layout.t, "t")->capture_default_str();
  cmd->add_flag("--sequence-parallel", a.layout.sequence_parallel, "split norms and dropouts t ways (needs t > 1)");
  cmd->add_option("--context-parallel-size", a.layout.cp, "cp")->capture_default_str();
  cmd->add_option("--expert-model-parallel-size", a.layout.ep, "ep")->capture_default_str();
  cmd->add_option("--pipeline-model-parallel-size", a.layout.p, "p")->capture_default_str();
  cmd->add_option("--num-layers-per-virtual-pipeline-stage", a.layers_per_virtual, "interleaving: v = L / (p x this)");
  cmd->add_flag("--use-distributed-optimizer", a.distributed_optimizer, "shard the optimizer state over d cp");
  cmd->add_option("--sharding", a.sharding, "none | distributed-optimizer | zero-1 | zero-2 | zero-3 | fsdp");
  cmd->add_option("--framework", a.framework, "megatron | torch | deepspeed (the shardings it offers)")
      ->capture_default_str();
  cmd->add_option("--recompute-granularity", a.recompute, "none | selective | full")->capture_default_str();
  cmd->add_option("--micro-batch-size", a.layout.micro_batch, "b")->capture_default_str();
  cmd->add_option("--global-batch-size", a.global_batch, "b x M x d (required unless --plan gives M)");
  cmd->add_option("--precision", a.precision, "bf16-mixed | fp32 | fp8-params")->capture_default_str();
  cmd->add_option("--plan", a.plan, "a v2 plan file: take the layout from its \"layout\" (then no layout flags)");
  cmd->add_flag("--json", a.json, "print one pipescope.llm-memory JSON object");
}

// The config's fields, then any model flag given on the command line over them.
TransformerShape shape_of(const LlmMemoryArgs& a) {
  TransformerShape s;
  if (!a.hf_config.empty()) {
    const HfModel m = load_hf_model(a.hf_config);
    s.name = m.name, s.layers = static_cast<int>(m.layers), s.hidden = static_cast<int>(m.hidden);
    s.heads = static_cast<int>(m.heads), s.kv_heads = static_cast<int>(m.kv_heads);
    s.ffn_hidden = static_cast<int>(m.ffn), s.swiglu = true, s.rms_norm = true, s.tied_embeddings = m.tied;
    s.bias_linear = m.output_bias && m.mlp_bias, s.qkv_bias = m.qkv_bias, s.vocabulary = static_cast<int>(m.vocabulary);
    if (m.head_dim * m.heads != m.hidden) s.kv_channels = static_cast<int>(m.head_dim);
    s.experts = static_cast<int>(m.experts), s.moe_topk = static_cast<int>(m.top_k);
  } else {
    s.rms_norm = false, s.tied_embeddings = true;
  }
  const TransformerShape& f = a.shape;
  for (auto [to, from] : {std::pair{&s.layers, f.layers}, {&s.hidden, f.hidden}, {&s.heads, f.heads},
                          {&s.kv_heads, f.kv_heads}, {&s.kv_channels, f.kv_channels}, {&s.ffn_hidden, f.ffn_hidden},
                          {&s.sequence, f.sequence}, {&s.vocabulary, f.vocabulary}, {&s.experts, f.experts},
                          {&s.moe_topk, f.moe_topk}, {&s.moe_ffn_hidden, f.moe_ffn_hidden}}) {
    if (from != 0) *to = from;
  }
  s.moe_layer_frequency = f.moe_layer_frequency;
  if (a.swiglu) s.swiglu = true;
  if (a.disable_bias) s.bias_linear = false, s.qkv_bias = false;
  if (a.untie) s.tied_embeddings = false;
  if (a.normalization == "RMSNorm" || a.normalization == "LayerNorm") {
    s.rms_norm = a.normalization == "RMSNorm";
  } else if (!a.normalization.empty()) {
    throw InputError("--normalization: expected LayerNorm or RMSNorm, got \"" + a.normalization + "\"");
  }
  if (s.name.empty()) s.name = "megatron-flags";
  return s;
}

template <typename Enum>
Enum parse(const std::string& flag, const std::string& name, std::optional<Enum> value, const std::string& choices) {
  if (!value) throw InputError(flag + ": expected " + choices + ", got \"" + name + "\"");
  return *value;
}

// The layout from the flags (or the plan), d from the GPU count, M from the global batch.
ParallelLayout layout_of(const LlmMemoryArgs& a, const TransformerShape& s) {
  ParallelLayout l = a.layout;
  if (!a.plan.empty()) {
    const std::optional<ParallelLayout> from = plan_layout(load_plan(a.plan));
    if (!from) throw InputError(a.plan + ": layout: missing (a version 2 plan with a \"layout\" is expected)");
    return *from;
  }
  if (l.t < 1 || l.cp < 1 || l.p < 1) throw InputError("--tensor-model-parallel-size, --context-parallel-size, "
                                                       "--pipeline-model-parallel-size: expected positive integers");
  l.d = std::max(1, a.gpus / (l.t * l.cp * l.p));
  if (a.layers_per_virtual > 0) {
    if (s.layers % l.p != 0 || (s.layers / l.p) % a.layers_per_virtual != 0) {
      throw InputError("--num-layers-per-virtual-pipeline-stage: " + std::to_string(a.layers_per_virtual) +
                       " does not divide the " + std::to_string(s.layers) + " / p layers of a pipeline rank");
    }
    l.v = s.layers / l.p / a.layers_per_virtual;
  }
  std::string sharding = a.sharding.empty() ? (a.distributed_optimizer ? "distributed-optimizer" : "none") : a.sharding;
  l.sharding = parse("--sharding", sharding, sharding_from_name(sharding), "none, distributed-optimizer, zero-1..3");
  l.recompute = parse("--recompute-granularity", a.recompute, recompute_from_name(a.recompute), "none, selective, full");
  l.precision = parse("--precision", a.precision, precision_recipe_from_name(a.precision), "bf16-mixed, fp32, fp8-params");
  const int64_t per_step = static_cast<int64_t>(l.micro_batch) * l.d;
  if (a.global_batch < 1 || per_step < 1 || a.global_batch % per_step != 0) {
    throw InputError("--global-batch-size: expected a positive multiple of --micro-batch-size x d = " +
                     std::to_string(l.micro_batch) + " x " + std::to_string(l.d) + ", got " +
                     std::to_string(a.global_batch));
  }
  l.microbatches = static_cast<int>(a.global_batch / per_step);
  return l;
}

Json stage_json(const StageMemory& st) {
  return {{"rank", st.rank},
          {"layers", st.layers},
          {"embedding", st.embedding},
          {"head", st.head},
          {"parameters", json_number(st.parameters)},
          {"expert_parameters", json_number(st.expert_parameters)},
          {"in_flight", json_number(st.in_flight)},
          {"parameter_bytes", json_number(st.parameter_bytes)},
          {"gradient_bytes", json_number(st.gradient_bytes)},
          {"optimizer_bytes", json_number(st.optimizer_bytes)},
          {"activation_bytes", json_number(st.activation_bytes)},
          {"total_bytes", json_number(st.total())}};
}

void print_table(const TransformerShape& s, const ParallelLayout& l, const LlmMemory& m,
                 const std::vector<std::string>& notes) {
  const Precision pr = precision_of(l.precision);
  std::printf("%s: L %d, h %d, a %d, kv %d, s %d, V %d (padded)%s\n", s.name.c_str(), s.layers, s.hidden, s.heads,
              s.kv_heads == 0 ? s.heads : s.kv_heads, s.sequence, s.vocabulary,
              s.experts > 0 ? (", " + std::to_string(s.experts) + " experts").c_str() : "");
  std::printf("t %d%s cp %d ep %d d %d p %d v %d, %s, recompute %s, b %d, M %d, %s (%d + %d + %d bytes/param)\n", l.t,
              l.sequence_parallel ? " sp" : "", l.cp, l.ep, l.d, l.p, l.v, to_string(l.sharding).c_str(),
              to_string(l.recompute).c_str(), l.micro_batch, l.microbatches, to_string(l.precision).c_str(),
              pr.parameter_bytes, pr.gradient_bytes, pr.optimizer_bytes);
  for (const std::string& n : notes) std::printf("note: %s\n", n.c_str());
  std::printf("%4s %6s %14s %11s %11s %11s %11s %11s  (GiB per GPU)\n", "rank", "layers", "params/GPU", "weights",
              "grads", "optimizer", "activations", "total");
  constexpr double kGiB = 1024.0 * 1024 * 1024;
  for (const StageMemory& st : m.stages) {
    std::printf("%4d %4d%s %14.0f %11.2f %11.2f %11.2f %11.2f %11.2f\n", st.rank, st.layers,
                st.embedding ? (st.head ? "EH" : "E ") : (st.head ? " H" : "  "), st.parameters,
                st.parameter_bytes / kGiB, st.gradient_bytes / kGiB, st.optimizer_bytes / kGiB,
                st.activation_bytes / kGiB, st.total() / kGiB);
  }
  std::printf("peak %.2f GiB per GPU (E: embedding, H: output layer and final norm)\n", m.peak() / kGiB);
}

void run(const LlmMemoryArgs& a) {
  if (a.hf_config.empty() && a.shape.layers == 0) throw InputError("--hf-config or --num-layers: one is required");
  TransformerShape s = shape_of(a);
  ParallelLayout l = layout_of(a, s);
  if (s.vocabulary > 0) s.vocabulary = padded_vocabulary(s.vocabulary, l.t, a.vocab_divisible_by);
  const std::optional<Framework> framework = framework_from_name(a.framework);
  if (!framework) throw InputError("--framework: expected megatron, torch or deepspeed, got \"" + a.framework + "\"");
  std::vector<std::string> notes;
  l = validate_layout(s, l, a.gpus, *framework, &notes);
  const LlmMemory m = llm_memory(s, l);
  if (!a.json) return print_table(s, l, m, notes);
  Json stages = Json::array();
  for (const StageMemory& st : m.stages) stages.push_back(stage_json(st));
  const Json out = {{"format", "pipescope.llm-memory"}, {"version", 1}, {"model", s.name},
                    {"layout", layout_to_json(l)}, {"gpus", a.gpus}, {"framework", a.framework},
                    {"padded_vocabulary", s.vocabulary}, {"layer_activation_bytes", json_number(m.layer_activation_bytes)},
                    {"stages", stages}, {"peak_bytes", json_number(m.peak())}, {"notes", notes}};
  std::cout << out.dump(1) << "\n";
}

}  // namespace

void add_llm_memory_command(CLI::App& app) {
  auto a = std::make_shared<LlmMemoryArgs>();
  CLI::App* cmd = app.add_subcommand("llm-memory", "Memory per GPU of each pipeline rank of an LLM-scale job, as "
                                                   "Megatron-LM keeps it (docs/memory.md, At LLM scale)");
  add_model_flags(cmd, *a);
  add_layout_flags(cmd, *a);
  cmd->callback([a] { run(*a); });
}

}  // namespace pipescope::cli
