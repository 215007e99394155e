// `pipescope llm-time`: the iteration time of a Megatron-LM GPT / Llama job from
// Megatron's own flags on a GPU file (llm/step_time.h): per-layer F / I / W, the
// pipeline simulated, the data-parallel tail, MFU. A table, or with --json one object.
// Bad input exits 2 naming the flag.
//   pipescope llm-time --gpu a100-80gb --num-layers 96 --hidden-size 12288 --num-attention-heads 96
//     --seq-length 2048 --vocab-size 51200 --tensor-model-parallel-size 8
//     --pipeline-model-parallel-size 8 --num-layers-per-virtual-pipeline-stage 4 --sequence-parallel
//     --recompute-granularity selective --micro-batch-size 1 --global-batch-size 64
#include <cstdlib>
#include <iomanip>
#include <iostream>
#include <memory>
#include <sstream>

#include "cli/commands.h"
#include "core/data_dir.h"
#include "core/error.h"
#include "core/json_reader.h"
#include "interop/hf_profile.h"
#include "llm/step_time.h"

namespace pipescope::cli {

namespace {

struct LlmTimeArgs {
  std::string gpu;
  TransformerShape shape;
  ParallelLayout layout;
  int gpus = 0;  // world size; 0: t x cp x p (d = 1)
  int global_batch = 0;
  int layers_per_virtual_stage = 0;
  std::string recompute = "none";
  bool distributed_optimizer = false, untie = false, no_bias = false;
  StepOptions options;
  bool json = false;
};

void add_model_flags(CLI::App* cmd, LlmTimeArgs& a) {
  cmd->add_option("--num-layers", a.shape.layers, "transformer layers L")->required();
  cmd->add_option("--hidden-size", a.shape.hidden, "hidden size h")->required();
  cmd->add_option("--num-attention-heads", a.shape.heads, "attention heads a")->required();
  cmd->add_option("--num-query-groups", a.shape.kv_heads, "KV heads (GQA); 0: as many as the attention heads");
  cmd->add_option("--ffn-hidden-size", a.shape.ffn_hidden, "FFN width (0: 4 h, or 8/3 h with --swiglu)");
  cmd->add_flag("--swiglu", a.shape.swiglu, "three FFN matrices (Llama)");
  cmd->add_flag("--disable-bias-linear", a.no_bias, "no biases on the linear layers");
  cmd->add_option("--vocab-size", a.shape.vocabulary, "vocabulary (padded)")->required();
  cmd->add_option("--seq-length", a.shape.sequence, "sequence length s")->required();
  cmd->add_flag("--untie-embeddings-and-output-weights", a.untie, "the head has weights of its own");
  cmd->add_option("--num-experts", a.shape.experts, "MoE experts (0: dense)");
  cmd->add_option("--moe-router-topk", a.shape.moe_topk, "experts per token");
  cmd->add_option("--moe-ffn-hidden-size", a.shape.moe_ffn_hidden, "an expert's FFN width (0: --ffn-hidden-size)");
}

void add_layout_flags(CLI::App* cmd, LlmTimeArgs& a) {
  cmd->add_option("--gpu", a.gpu, "GPU file or name (a100-80gb, h100-sxm, h200, b200, mi300x)")->required();
  cmd->add_option("--gpus", a.gpus, "GPUs in the job (world size); data parallel = gpus / (t cp p); 0: no data parallel");
  cmd->add_option("--tensor-model-parallel-size", a.layout.t, "t")->capture_default_str();
  cmd->add_flag("--sequence-parallel", a.layout.sequence_parallel, "shard LayerNorm and dropout along the sequence");
  cmd->add_option("--context-parallel-size", a.layout.cp, "cp")->capture_default_str();
  cmd->add_option("--expert-model-parallel-size", a.layout.ep, "ep")->capture_default_str();
  cmd->add_option("--pipeline-model-parallel-size", a.layout.p, "p")->capture_default_str();
  cmd->add_option("--num-layers-per-virtual-pipeline-stage", a.layers_per_virtual_stage,
                  "layers per model chunk: the interleaved schedule with L / (p x this) chunks");
  cmd->add_option("--micro-batch-size", a.layout.micro_batch, "b")->capture_default_str();
  cmd->add_option("--global-batch-size", a.global_batch, "samples per step (default: b x p x data parallel)");
  cmd->add_option("--recompute-granularity", a.recompute, "none | selective | full")->capture_default_str();
  cmd->add_flag("--use-distributed-optimizer", a.distributed_optimizer, "shard the optimizer state over data parallel");
  cmd->add_flag("--overlap-grad-reduce", a.options.overlap_grad_reduce, "overlap the gradient reduce with backward");
  cmd->add_flag("--overlap-param-gather", a.options.overlap_param_gather, "overlap the parameter gather with forward");
  cmd->add_option("--order", a.layout.order, "rank order of the groups")->capture_default_str();
  cmd->add_flag("--json", a.json, "print one JSON object instead of the table");
}

void positive(int value, const std::string& flag) {
  if (value < 1) throw InputError(flag + ": expected a positive integer, got " + std::to_string(value));
}

void divides(int what, int by, const std::string& flag, const std::string& of) {
  if (by < 1 || what % by != 0) {
    throw InputError(flag + " " + std::to_string(by) + " does not divide " + of + " (" + std::to_string(what) + ")");
  }
}

// Checks the flags and fills d, v, M (InputError naming the flag).
void finish_layout(LlmTimeArgs& a) {
  ParallelLayout& l = a.layout;
  TransformerShape& s = a.shape;
  for (auto [v, f] : {std::pair{s.layers, "--num-layers"}, {s.hidden, "--hidden-size"}, {s.heads, "--num-attention-heads"},
                      {s.vocabulary, "--vocab-size"}, {s.sequence, "--seq-length"}, {l.t, "--tensor-model-parallel-size"},
                      {l.cp, "--context-parallel-size"}, {l.ep, "--expert-model-parallel-size"},
                      {l.p, "--pipeline-model-parallel-size"}, {l.micro_batch, "--micro-batch-size"}})
    positive(v, f);
  divides(s.hidden, s.heads, "--num-attention-heads", "--hidden-size");
  divides(s.heads, l.t, "--tensor-model-parallel-size", "--num-attention-heads");
  divides(s.vocabulary, l.t, "--tensor-model-parallel-size", "--vocab-size");
  divides(s.sequence, l.cp, "--context-parallel-size", "--seq-length");
  if (s.kv_heads > 0) divides(s.kv_heads, l.t, "--tensor-model-parallel-size", "--num-query-groups");
  if (s.experts > 0 && s.moe_topk < 1) throw InputError("--moe-router-topk: expected >= 1 with --num-experts");
  const int model = l.t * l.cp * l.p;
  if (a.gpus < 0) throw InputError("--gpus: expected a positive integer, got " + std::to_string(a.gpus));
  if (a.gpus > 0) divides(a.gpus, model, "t x cp x p =", "--gpus");
  l.d = a.gpus > 0 ? a.gpus / model : 1;
  if (a.layers_per_virtual_stage > 0) {
    divides(s.layers, l.p * a.layers_per_virtual_stage, "--pipeline-model-parallel-size x --num-layers-per-virtual-pipeline-stage =", "--num-layers");
    l.v = s.layers / (l.p * a.layers_per_virtual_stage);
  }
  const int per_step = l.micro_batch * l.d;
  if (a.global_batch == 0) a.global_batch = per_step * l.p;
  divides(a.global_batch, per_step, "--micro-batch-size x data parallel =", "--global-batch-size");
  l.microbatches = a.global_batch / per_step;
  const auto r = recompute_from_name(a.recompute);
  if (!r) throw InputError("--recompute-granularity: expected none, selective or full, got \"" + a.recompute + "\"");
  l.recompute = *r;
  l.sharding = a.distributed_optimizer ? Sharding::DistributedOptimizer : Sharding::None;
  s.tied_embeddings = !a.untie;
  s.bias_linear = !a.no_bias;
  s.name = "gpt";
}

Json layer_json(const LayerTime& t) {
  return {{"forward_ms", t.forward_ns / 1e6}, {"backward_input_ms", t.input_grad_ns / 1e6},
          {"backward_weight_ms", t.weight_grad_ns / 1e6}, {"recompute_ms", t.recompute_ns / 1e6},
          {"forward_gemm_ms", t.forward_gemm_ns / 1e6}, {"forward_elementwise_ms", t.forward_memory_ns / 1e6},
          {"forward_comm_ms", t.forward_comm_ns / 1e6}, {"backward_comm_exposed_ms", t.backward_comm_exposed_ns / 1e6},
          {"parameters", t.parameters}};
}

Json step_json(const LlmTimeArgs& a, const StepTime& st) {
  const ParallelLayout& l = a.layout;
  return {{"format", "pipescope.llm_time"}, {"version", 1}, {"gpu", a.gpu},
          {"layout", {{"t", l.t}, {"sequence_parallel", l.sequence_parallel}, {"cp", l.cp}, {"ep", l.ep}, {"d", l.d},
                      {"p", l.p}, {"v", l.v}, {"micro_batch", l.micro_batch}, {"microbatches", l.microbatches},
                      {"global_batch", a.global_batch}, {"recompute", to_string(l.recompute)},
                      {"sharding", to_string(l.sharding)}, {"order", l.order}, {"gpus", l.gpus()}}},
          {"schedule", st.schedule}, {"layer", layer_json(st.layer)}, {"embedding", layer_json(st.embedding)},
          {"head", layer_json(st.head)}, {"pipeline_ms", st.pipeline_ns / 1e6}, {"optimizer_ms", st.optimizer_ns / 1e6},
          {"dp_exposed_ms", st.dp_exposed_ns / 1e6}, {"embedding_sync_ms", st.embedding_sync_ns / 1e6},
          {"step_ms", st.step_ns / 1e6}, {"bubble_fraction", st.bubble}, {"mfu", st.mfu},
          {"model_tflop_per_step", st.model_flops / 1e12}};
}

std::string step_table(const LlmTimeArgs& a, const StepTime& st) {
  std::ostringstream o;
  o << std::fixed << std::setprecision(3);
  const ParallelLayout& l = a.layout;
  o << "gpt L " << a.shape.layers << " h " << a.shape.hidden << " a " << a.shape.heads << " s " << a.shape.sequence
    << " on " << l.gpus() << " GPUs (" << a.gpu << "): t " << l.t << (l.sequence_parallel ? " +sp" : "") << " cp " << l.cp
    << " p " << l.p << " v " << l.v << " d " << l.d << ", b " << l.micro_batch << " x M " << l.microbatches
    << ", recompute " << to_string(l.recompute) << ", " << st.schedule << "\n";
  o << "| part | F ms | I ms | W ms |\n|---|---:|---:|---:|\n";
  for (auto [name, t] : {std::pair{"transformer layer", &st.layer}, {"embedding", &st.embedding}, {"head + loss", &st.head}})
    o << "| " << name << " | " << t->forward_ns / 1e6 << " | " << t->input_grad_ns / 1e6 << " | " << t->weight_grad_ns / 1e6 << " |\n";
  o << "pipeline (simulated, optimizer included) " << st.pipeline_ns / 1e6 << " ms, bubble " << st.bubble << "\n"
    << "data-parallel exposed " << st.dp_exposed_ns / 1e6 << " ms, tied-embedding all-reduce "
    << st.embedding_sync_ns / 1e6 << " ms, optimizer " << st.optimizer_ns / 1e6 << " ms\n"
    << "step " << st.step_ns / 1e6 << " ms, MFU " << std::setprecision(1) << 100.0 * st.mfu << "%\n";
  return o.str();
}

}  // namespace

void add_llm_time_command(CLI::App& app) {
  auto args = std::make_shared<LlmTimeArgs>();
  CLI::App* cmd = app.add_subcommand("llm-time", "Iteration time of a Megatron-LM job from its flags: per-layer F/I/W, "
                                                 "the pipeline simulated, data-parallel tail, MFU (docs/llm-scale.md)");
  add_model_flags(cmd, *args);
  add_layout_flags(cmd, *args);
  cmd->callback([args] {
    finish_layout(*args);
    std::vector<std::string> dirs;
    if (const char* env = std::getenv("PIPESCOPE_GPU_DIR")) dirs.emplace_back(env);
    dirs.push_back(data_dir("profiles/gpus"));
    const GpuModel gpu = load_gpu_model(find_gpu_file(args->gpu, dirs));
    const StepTime st = step_time(args->shape, args->layout, gpu, args->options);
    std::cout << (args->json ? step_json(*args, st).dump(2) + "\n" : step_table(*args, st));
  });
}

}  // namespace pipescope::cli
