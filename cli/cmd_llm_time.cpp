// `pipescope llm-time`: the iteration time of a Megatron-LM GPT / Llama job from
// Megatron's own flags on a GPU file, evaluated as llm-plan evaluates its candidates
// (llm/job.h's evaluate_job): per-layer F / I / W, the pipeline simulated, the
// data-parallel tail, ZeRO-2 / 3 traffic, MFU. A table, or with --json one object.
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
#include "cli/llm_flags.h"
#include "core/data_dir.h"
#include "core/error.h"
#include "core/json_reader.h"
#include "interop/hf_profile.h"
#include "llm/framework.h"
#include "llm/job.h"
#include "llm/step_time.h"

namespace pipescope::cli {

namespace {

struct LlmTimeArgs {
  std::string gpu;
  LlmFlags flags;
  StepOptions options;
  bool json = false;
};

constexpr LayoutFlagsUse kUse{};  // --gpus 0: t cp p GPUs (d = 1); --global-batch-size 0: b x p x d

Json layer_json(const LayerTime& t) {
  return {{"forward_ms", t.forward_ns / 1e6}, {"backward_input_ms", t.input_grad_ns / 1e6},
          {"backward_weight_ms", t.weight_grad_ns / 1e6}, {"recompute_ms", t.recompute_ns / 1e6},
          {"forward_gemm_ms", t.forward_gemm_ns / 1e6}, {"forward_elementwise_ms", t.forward_memory_ns / 1e6},
          {"forward_comm_ms", t.forward_comm_ns / 1e6}, {"backward_comm_exposed_ms", t.backward_comm_exposed_ns / 1e6},
          {"parameters", t.parameters}};
}

Json step_json(const LlmTimeArgs& a, const LlmJob& job, const StepTime& st) {
  const ParallelLayout& l = job.layout;
  return {{"format", "pipescope.llm_time"}, {"version", 1}, {"gpu", a.gpu},
          {"layout", {{"t", l.t}, {"sequence_parallel", l.sequence_parallel}, {"cp", l.cp}, {"ep", l.ep}, {"d", l.d},
                      {"p", l.p}, {"v", l.v}, {"micro_batch", l.micro_batch}, {"microbatches", l.microbatches},
                      {"global_batch", job.global_batch}, {"recompute", to_string(l.recompute)},
                      {"sharding", to_string(l.sharding)}, {"order", l.order}, {"gpus", l.gpus()},
                      {"overlap_grad_reduce", l.overlap_grad_reduce}, {"overlap_param_gather", l.overlap_param_gather},
                      {"overlap_p2p", l.overlap_p2p}, {"attention", to_string(l.attention)},
                      {"fp8", to_string(l.fp8)}, {"tp_comm_overlap", l.tp_comm_overlap},
                      {"fused_elementwise", l.fused_elementwise}}},
          {"schedule", st.schedule}, {"layer", layer_json(st.layer)}, {"embedding", layer_json(st.embedding)},
          {"head", layer_json(st.head)}, {"pipeline_ms", st.pipeline_ns / 1e6}, {"optimizer_ms", st.optimizer_ns / 1e6},
          {"dp_exposed_ms", st.dp_exposed_ns / 1e6}, {"embedding_sync_ms", st.embedding_sync_ns / 1e6},
          {"sharding_ms", st.sharding_ns / 1e6}, {"step_ms", st.step_ns / 1e6}, {"step_ns", st.step_ns},
          {"bubble_fraction", st.bubble}, {"mfu", st.mfu},
          {"model_tflop_per_step", st.model_flops / 1e12}};
}

std::string step_table(const LlmTimeArgs& a, const LlmJob& job, const StepTime& st) {
  std::ostringstream o;
  o << std::fixed << std::setprecision(3);
  const ParallelLayout& l = job.layout;
  const TransformerShape& s = job.shape;
  o << "gpt L " << s.layers << " h " << s.hidden << " a " << s.heads << " s " << s.sequence
    << " on " << l.gpus() << " GPUs (" << a.gpu << "): t " << l.t << (l.sequence_parallel ? " +sp" : "") << " cp " << l.cp
    << " p " << l.p << " v " << l.v << " d " << l.d << ", b " << l.micro_batch << " x M " << l.microbatches
    << ", recompute " << to_string(l.recompute) << ", " << st.schedule << (l.tp_comm_overlap ? ", TP overlapped" : "")
    << "; " << kernels_text(l) << "\n";
  o << "| part | F ms | I ms | W ms |\n|---|---:|---:|---:|\n";
  for (auto [name, t] : {std::pair{"transformer layer", &st.layer}, {"embedding", &st.embedding}, {"head + loss", &st.head}})
    o << "| " << name << " | " << t->forward_ns / 1e6 << " | " << t->input_grad_ns / 1e6 << " | " << t->weight_grad_ns / 1e6 << " |\n";
  o << "pipeline (simulated, optimizer included, p2p " << (l.overlap_p2p ? "overlapped" : "blocking") << ") "
    << st.pipeline_ns / 1e6 << " ms, bubble " << st.bubble << "\n"
    << "data-parallel exposed " << st.dp_exposed_ns / 1e6 << " ms (gradient reduce "
    << (l.overlap_grad_reduce ? "overlapped" : "after the flush") << ", parameter gather "
    << (l.overlap_param_gather ? "overlapped" : "after the step") << "), tied-embedding all-reduce "
    << st.embedding_sync_ns / 1e6 << " ms, optimizer " << st.optimizer_ns / 1e6 << " ms, ZeRO traffic not hidden "
    << st.sharding_ns / 1e6 << " ms\n"
    << "step " << st.step_ns / 1e6 << " ms, MFU " << std::setprecision(1) << 100.0 * st.mfu << "%\n";
  return o.str();
}

}  // namespace

void add_llm_time_command(CLI::App& app) {
  auto args = std::make_shared<LlmTimeArgs>();
  CLI::App* cmd = app.add_subcommand("llm-time", "Iteration time of a Megatron-LM job from its flags: per-layer F/I/W, "
                                                 "the pipeline simulated, data-parallel tail, MFU (docs/llm-scale.md)");
  cmd->add_option("--gpu", args->gpu, "GPU file or name (a100-80gb, h100-sxm, h200, b200, mi300x)")->required();
  add_model_flags(cmd, args->flags);
  add_layout_flags(cmd, args->flags, kUse);
  cmd->add_flag("--overlap-grad-reduce", args->options.overlap_grad_reduce,
                "overlap the gradient reduce with backward (torch: always; DeepSpeed: overlap_comm)");
  cmd->add_flag("--overlap-param-gather", args->options.overlap_param_gather,
                "overlap the parameter gather with forward (torch FSDP2 and DeepSpeed ZeRO-3: always)");
  cmd->add_flag("--json", args->json, "print one JSON object instead of the table");
  cmd->callback([args] {
    LlmJob job = job_from_flags(args->flags, kUse);
    if (args->options.overlap_param_gather) {
      const std::string refused = param_gather_refusal(job.framework, job.layout.sharding);
      if (!refused.empty()) throw InputError("--overlap-param-gather: " + refused);
    }
    set_framework_overlap(job.framework, args->options.overlap_grad_reduce, args->options.overlap_param_gather,
                          job.layout, !args->flags.no_overlap_p2p);
    const GpuModel gpu = load_gpu(args->gpu);
    const StepTime st = evaluate_job(job_of(job, args->flags, args->gpu, gpu), gpu).time;
    std::cout << (args->json ? step_json(*args, job, st).dump(2) + "\n" : step_table(*args, job, st));
  });
}

}  // namespace pipescope::cli
