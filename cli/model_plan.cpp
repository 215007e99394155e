// The model form of `pipescope plan` (and `llm-plan`, its old name): cli/model_plan.h.
// Moved here from cmd_llm_plan.cpp whole, so the two commands share one search, one table,
// one JSON object and one --out; the flags map onto LlmSearchRequest's fields and the
// search refuses what it cannot run (llm/layout_search.h), naming the flag.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <sstream>

#include "cli/model_plan.h"
#include "core/data_dir.h"
#include "core/error.h"
#include "core/json_reader.h"
#include "interop/hf_profile.h"
#include "llm/collectives.h"
#include "llm/job.h"
#include "llm/layout_search.h"
#include "llm/llm_plan_json.h"
#include "llm/plan_layout.h"

namespace pipescope::cli {

namespace {

std::string result_table(const ModelPlanArgs& a, const TransformerShape& s, const LlmSearchResult& r) {
  std::ostringstream o;
  char line[256];
  std::snprintf(line, sizeof line, "%s: L %d h %d a %d s %d on %d GPUs (%s, %.1f GB each), global batch %d, %s\n",
                s.name.c_str(), s.layers, s.hidden, s.heads, s.sequence, a.request.gpus, a.gpu.c_str(),
                r.capacity / 1e9, a.request.global_batch, a.flags.framework.c_str());
  o << line;
  if (!r.best.empty()) o << "kernels: " << kernels_text(r.best.front().layout) << "\n";
  o << "searched: " << r.factorizations << " (t, cp, d, p) factorizations, " << r.enumerated << " layouts, "
    << r.valid << " valid, " << r.fitting << " fit in memory, " << r.simulated << " simulated\n";
  o << "| # | layout | schedule | step s | bound s | bubble | DP exposed s | peak GB | MFU |\n"
       "|---:|---|---|---:|---:|---:|---:|---:|---:|\n";
  for (std::size_t i = 0; i < r.best.size(); ++i) {
    const LlmCandidate& c = r.best[i];
    std::snprintf(line, sizeof line, "| %zu | %s | %s | %.3f | %.3f | %.3f | %.3f | %.1f | %.1f%% |\n", i + 1,
                  layout_summary(c.layout).c_str(), c.schedule.c_str(), c.step_ns / 1e9, c.bound_ns / 1e9, c.bubble,
                  c.dp_exposed_ns / 1e9, c.peak_bytes / 1e9, 100 * c.mfu);
    o << line;
  }
  if (!r.best.empty()) o << binding_rank_line(r.best.front().ranks, r.capacity, r.headroom) << "\n";
  o << "why:\n";
  for (const std::string& w : r.why) o << "  " << w << "\n";
  if (!r.lost.empty()) o << "runner-ups:\n";
  for (std::size_t i = 0; i < r.lost.size(); ++i) o << "  #" << i + 2 << " " << r.lost[i] << "\n";
  return o.str();
}

// The best layout's job as a version 3 plan and its profile beside it (llm/job.h's
// write_job_plan): the cluster names the GPU file as --gpu did (a file: relative to the plan's folder).
void write_plan(const ModelPlanArgs& a, TransformerShape shape, const LlmCandidate& best, const GpuModel& gpu) {
  Job job;
  job.vocab_size = shape.vocabulary;
  job.vocab_divisible_by = a.request.vocab_divisible_by;
  shape.vocabulary = best.vocabulary;
  job.shape = shape;
  job.model_source = a.flags.hf_config;
  job.cluster = {a.gpu, gpu.gpus_per_node(), a.request.headroom_bytes};
  job.layout = best.layout;
  job.framework = a.request.framework;
  write_job_plan(job, gpu, a.gpu, a.out);
}

void run(ModelPlanArgs& a, const std::string& name, const TransformerShape& shape, const std::string& note) {
  LlmSearchRequest& q = a.request;
  q.shape = shape;
  q.vocab_divisible_by = a.flags.vocab_divisible_by;
  q.framework = framework_from_flags(a.flags);
  q.schedule = schedule_from_flags(a.schedule);
  q.options.overlap_p2p = !a.flags.no_overlap_p2p;
  const auto precision = precision_recipe_from_name(a.precision);
  if (!precision) throw InputError("--precision: expected bf16-mixed, fp32 or fp8-params, got \"" + a.precision + "\"");
  q.precision = *precision;
  q.attention = attention_kernel_from_flag(a.flags.attention_backend);
  q.fp8 = fp8_recipe_from_flags(a.flags.fp8_format, a.flags.fp8_recipe);
  q.fused_elementwise = !a.flags.eager;
  if (a.tp_comm_overlap != "search" && a.tp_comm_overlap != "on" && a.tp_comm_overlap != "off") {
    throw InputError("--tp-comm-overlap: expected search, on or off, got \"" + a.tp_comm_overlap + "\"");
  }
  if (a.tp_comm_overlap != "search") q.tp_comm_overlap = a.tp_comm_overlap == "on";
  q.memory_bytes = a.memory_gb * 1e9;
  if (a.memory_headroom_gb) {
    if (!std::isfinite(*a.memory_headroom_gb) || *a.memory_headroom_gb < 0) {
      throw InputError("--memory-headroom: expected a number of GB >= 0, got " + std::to_string(*a.memory_headroom_gb));
    }
    q.headroom_bytes = *a.memory_headroom_gb * 1e9;
  }
  const GpuModel gpu = load_gpu(a.gpu);
  const auto start = std::chrono::steady_clock::now();
  bool shown = false;
  q.progress = [&](const LlmSearchProgress& p) {
    if (std::chrono::steady_clock::now() - start < std::chrono::seconds(1)) return;
    std::fprintf(stderr, "\r%s: %lld layouts, %lld valid, %lld fit, %lld simulated", name.c_str(),
                 static_cast<long long>(p.enumerated), static_cast<long long>(p.valid),
                 static_cast<long long>(p.fitting), static_cast<long long>(p.simulated));
    shown = true;
  };
  LlmPlanFile file{q.shape.name, a.gpu, q.gpus, q.global_batch, q.framework, search_layouts(q, gpu)};
  const LlmSearchResult& r = file.result;
  if (shown) std::fprintf(stderr, "\n");
  if (!a.out.empty()) write_plan(a, q.shape, r.best.front(), gpu);
  std::cout << (a.json ? llm_plan_result_to_json(file).dump(1) + "\n" : note + result_table(a, q.shape, r));
}

void refuse_stdout_plan(const ModelPlanArgs& a) {
  if (a.out == "-") {
    throw InputError("--out -: with a model the plan is written with its profile beside it; give a file name");
  }
}

}  // namespace

void add_model_form_flags(CLI::App* cmd, ModelPlanArgs& a) {
  LlmSearchRequest& q = a.request;
  cmd->add_option("--gpu", a.gpu, "GPU file or name (a100-80gb, h100-sxm, h200, b200, mi300x); required");
  cmd->add_option("--precision", a.precision, "bf16-mixed | fp32 | fp8-params")->capture_default_str();
  cmd->add_option("--order", q.order, "rank order of the groups (the first share a node)")->capture_default_str();
  cmd->add_option("--attention-backend", a.flags.attention_backend,
                  "flash (fused: FlashAttention, cuDNN, TE, SDPA) | unfused (Korthikanti's accounting)")
      ->capture_default_str();
  cmd->add_option("--fp8-format", a.flags.fp8_format, "hybrid | e4m3: fp8 linears (the recipe defaults to delayed)");
  cmd->add_option("--fp8-recipe", a.flags.fp8_recipe, "delayed | tensorwise | rowwise | mxfp8 (the framework's)");
  cmd->add_flag("--eager", a.flags.eager, "elementwise ops as eager PyTorch (torchtitan without compile)");
  cmd->add_option("--tp-comm-overlap", a.tp_comm_overlap,
                  "search | on | off: TP collectives overlapped with GEMMs (--tp-comm-overlap, async TP)")
      ->capture_default_str();
  cmd->add_option("--tensor-model-parallel-size", q.t, "pin t (0: search)")->capture_default_str();
  cmd->add_option("--context-parallel-size", q.cp, "pin cp (0: search)")->capture_default_str();
  cmd->add_option("--expert-model-parallel-size", q.ep, "pin ep (0: search)")->capture_default_str();
  cmd->add_option("--virtual-pipeline-size", q.v, "pin v, model chunks per pipeline rank (0: search)")
      ->capture_default_str();
  cmd->add_option("--schedule", a.schedule,
                  "pin the pipeline schedule (gpipe | 1f1b | interleaved | looped-bfs | interleaved-zb | zb-v | "
                  "dualpipev; one the --framework runs; default: search them)");
  cmd->add_option("--micro-batch-size", q.micro_batch, "pin b (0: search powers of two)")->capture_default_str();
  cmd->add_option("--max-micro-batch-size", q.max_micro_batch, "largest b searched")->capture_default_str();
  cmd->add_option("--max-virtual-stages", q.max_v, "largest v searched")->capture_default_str();
  cmd->add_option("--memory-gb", a.memory_gb, "memory per GPU in GB (default: the GPU file's)");
  cmd->add_option("--memory-headroom", a.memory_headroom_gb,
                  "GB per GPU kept free for what a launch adds (CUDA context, NCCL buffers, allocator "
                  "fragmentation; default: the framework's, 6.0 GB of 80 for Megatron-LM and torch, docs/memory.md)");
  cmd->add_flag("--overlap-grad-reduce", q.options.overlap_grad_reduce,
                "overlap the gradient reduce with backward (Megatron, DeepSpeed overlap_comm; torch always does)");
  cmd->add_flag("--overlap-param-gather", q.options.overlap_param_gather,
                "overlap the parameter gather with forward, under the distributed optimizer (torch FSDP2 and DeepSpeed "
                "ZeRO-3 always do)");
  cmd->add_flag("--no-overlap-p2p-communication", a.flags.no_overlap_p2p,
                "time Megatron-LM's interleaved schedule with blocking p2p (default: overlapped, its "
                "--overlap-p2p-communication default); the export then writes the flag");
  cmd->add_flag("--exhaustive", q.exhaustive, "simulate every layout that fits (no branch and bound)");
}

void add_shared_plan_flags(CLI::App* cmd, ModelPlanArgs& a, PlanForms forms) {
  LlmSearchRequest& q = a.request;
  const bool both = forms == PlanForms::Both;
  cmd->add_option("--gpus", q.gpus, both ? "GPUs in the job: t x cp x d x p (with --profile: = --devices, K x r)"
                                         : "GPUs in the job: t x cp x d x p; required");
  cmd->add_option("--global-batch-size", q.global_batch,
                  both ? "sequences per step: b x M x d (with --profile: = --batch, samples per step)"
                       : "sequences per step: b x M x d; required");
  cmd->add_option("--pipeline-model-parallel-size", q.p,
                  both ? "pin p, the pipeline positions K (0: search; with --profile at most --max-stages)"
                       : "pin p (0: search)")
      ->capture_default_str();
  CLI::Option* framework =
      cmd->add_option("--framework", a.flags.framework,
                      both ? "megatron | torch | deepspeed: search only what it runs (llm/framework.h; default: with "
                             "a model megatron, with --profile every schedule pipescope has). A profile of `profile "
                             "synth --hf-config` with --framework is planned as its job: the model form's search"
                           : "megatron | torch | deepspeed: search only what it runs");
  if (!both) framework->capture_default_str();
  cmd->add_option("--top", q.top, both ? "how many of the best plans (layouts) to time exactly and print"
                                       : "how many layouts to time exactly and print")
      ->capture_default_str();
  cmd->add_flag("--json", a.json,
                both ? "print one JSON object instead of the table (pipescope.llm_plan with a model, "
                       "pipescope.plan_search with --profile)"
                     : "print one pipescope.llm_plan JSON object");
  cmd->add_option(both ? "-o,--output,--out" : "--out", a.out,
                  both ? "write the winner as a plan file, for simulate --plan (with a model: a version 3 plan "
                         "of the whole job, its profile beside it)"
                       : "write the best layout's job as a version 3 plan file (and its profile beside it)");
}

void run_model_plan(ModelPlanArgs& a, const CLI::App& cmd) {
  for (const char* flag : {"--gpu", "--gpus", "--global-batch-size"}) {
    if (cmd.count(flag) == 0) {
      throw InputError(std::string(flag) + ": required with a model (" + cmd.get_name() +
                       " with --hf-config or Megatron's model flags takes --gpu, --gpus and --global-batch-size)");
    }
  }
  refuse_stdout_plan(a);
  run(a, cmd.get_name(), shape_from_flags(a.flags), "");
}

void run_model_plan_on(ModelPlanArgs& a, const std::string& name, const TransformerShape& shape,
                       const std::string& note) {
  refuse_stdout_plan(a);
  run(a, name, shape, note);
}

}  // namespace pipescope::cli
