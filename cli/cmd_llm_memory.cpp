// `pipescope llm-memory`: memory per GPU of each pipeline rank of an LLM-scale job
// (llm/memory.h), from a Hugging Face config.json or Megatron-LM's model flags, laid out
// by Megatron-LM's parallelism flags (or a v2 plan's "layout", or, without model flags,
// a v3 plan's whole job). Prints a table, or with --json one pipescope.llm-memory object. Bad input exits 2 naming the flag.
#include <cstdio>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "cli/llm_flags.h"
#include "core/error.h"
#include "llm/layout_check.h"
#include "llm/memory.h"
#include "llm/pipeline_schedule.h"
#include "llm/plan_layout.h"

namespace pipescope::cli {

namespace {

Json stage_json(const RankMemory& st) {
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
  std::printf("t %d%s cp %d ep %d d %d p %d v %d, %s, recompute %s, b %d, M %d, %s (%d + %d + %d bytes/param), %s\n",
              l.t, l.sequence_parallel ? " sp" : "", l.cp, l.ep, l.d, l.p, l.v, to_string(l.sharding).c_str(),
              to_string(l.recompute).c_str(), l.micro_batch, l.microbatches, to_string(l.precision).c_str(),
              pr.parameter_bytes, pr.gradient_bytes, pr.optimizer_bytes, to_string(layout_schedule(l)).c_str());
  std::printf("%s\n", kernels_text(l).c_str());
  for (const std::string& n : notes) std::printf("note: %s\n", n.c_str());
  std::printf("%4s %6s %14s %11s %11s %11s %11s %11s  (GiB per GPU)\n", "rank", "layers", "params/GPU", "weights",
              "grads", "optimizer", "activations", "total");
  constexpr double kGiB = 1024.0 * 1024 * 1024;
  for (const RankMemory& st : m.stages) {
    std::printf("%4d %4d%s %14.0f %11.2f %11.2f %11.2f %11.2f %11.2f\n", st.rank, st.layers,
                st.embedding ? (st.head ? "EH" : "E ") : (st.head ? " H" : "  "), st.parameters,
                st.parameter_bytes / kGiB, st.gradient_bytes / kGiB, st.optimizer_bytes / kGiB,
                st.activation_bytes / kGiB, st.total() / kGiB);
  }
  std::printf("peak %.2f GiB per GPU (E: embedding, H: output layer and final norm)\n", m.peak() / kGiB);
}

constexpr LayoutFlagsUse kUse{.gpus_required = true, .global_batch_required = true, .plan_file = true};

struct LlmMemoryArgs {
  LlmFlags flags;
  bool json = false;
};

void run(const LlmMemoryArgs& a) {
  const LlmJob job = job_from_flags(a.flags, kUse);
  const TransformerShape& s = job.shape;
  const ParallelLayout& l = job.layout;
  const LlmMemory m = llm_memory(s, l);
  if (!a.json) return print_table(s, l, m, job.notes);
  Json stages = Json::array();
  for (const RankMemory& st : m.stages) stages.push_back(stage_json(st));
  const Json out = {{"format", "pipescope.llm-memory"}, {"version", 1}, {"model", s.name},
                    {"layout", layout_to_json(l)}, {"gpus", job.gpus}, {"framework", to_string(job.framework)},
                    {"padded_vocabulary", s.vocabulary}, {"layer_activation_bytes", json_number(m.layer_activation_bytes)},
                    {"stages", stages}, {"peak_bytes", json_number(m.peak())}, {"notes", job.notes}};
  std::cout << out.dump(1) << "\n";
}

}  // namespace

void add_llm_memory_command(CLI::App& app) {
  auto a = std::make_shared<LlmMemoryArgs>();
  CLI::App* cmd = app.add_subcommand("llm-memory", "Memory per GPU of each pipeline rank of an LLM-scale job, as "
                                                   "Megatron-LM keeps it (docs/memory.md, At LLM scale)");
  add_model_flags(cmd, a->flags);
  add_layout_flags(cmd, a->flags, kUse);
  cmd->add_flag("--json", a->json, "print one pipescope.llm-memory JSON object");
  cmd->callback([a] { run(*a); });
}

}  // namespace pipescope::cli
