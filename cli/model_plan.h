// `pipescope plan` with a model instead of a profile, and `llm-plan`, its old name: a
// transformer (a Hugging Face config or Megatron's model flags, cli/llm_flags.h), a GPU
// file, a GPU count and a global batch go to llm/layout_search.h's search; its answer
// prints as one table, or with --json one pipescope.llm_plan object, and --out writes the
// best as a version 3 plan (the whole job) with its profile beside it. Invariant: both
// commands declare these flags here and run run_model_plan, so the same flags print the
// same bytes and write the same files through either name.
//   ModelPlanArgs a;  add_model_flags(cmd, a.flags);  add_model_form_flags(cmd, a);
//   add_shared_plan_flags(cmd, a, PlanForms::Both);
//   run_model_plan(a, *cmd);  // in the callback
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include <optional>

#include "cli/llm_flags.h"
#include "llm/layout_search.h"

namespace pipescope::cli {

struct ModelPlanArgs {
  std::string gpu, precision = "bf16-mixed", out, schedule;
  LlmFlags flags;            // the model (add_model_flags) and --framework
  LlmSearchRequest request;  // --gpus, --global-batch-size, the pins, --top
  double memory_gb = 0;
  std::optional<double> memory_headroom_gb;  // --memory-headroom (absent: the framework's reserve)
  std::string tp_comm_overlap = "search";     // --tp-comm-overlap search | on | off
  bool json = false;
};

// Which forms the command has: llm-plan the model's only, plan the model's and --profile's.
enum class PlanForms { Model, Both };

// The flags only the model form takes, beside the model's own (add_model_flags: --hf-config,
// --num-layers, ...): --gpu, --precision, --order, the pins of t, cp, ep, v, b and the schedule,
// --max-micro-batch-size, --max-virtual-stages, --memory-gb, --memory-headroom, --overlap-grad-reduce,
// --overlap-param-gather, --exhaustive.
void add_model_form_flags(CLI::App* cmd, ModelPlanArgs& a);
// The flags both forms of `plan` take, in Megatron's names where the concept is one:
// --gpus, --global-batch-size, --pipeline-model-parallel-size, --framework, --top, --json and
// --out (with Both also -o / --output, plan's name). Their help describes `forms`.
void add_shared_plan_flags(CLI::App* cmd, ModelPlanArgs& a, PlanForms forms);
// The search of the model form: checks that `cmd` was given --gpu, --gpus and
// --global-batch-size (InputError naming each missing one), searches, prints the table or
// the JSON object on stdout and writes --out. Progress goes to stderr, "NAME: ..." with
// `cmd`'s name, once the search has taken more than a second.
void run_model_plan(ModelPlanArgs& a, const CLI::App& cmd);
// The same search on a transformer known another way (cmd_plan.cpp: a profile of
// `profile synth --hf-config` planned as its job): `shape` stands for the model flags,
// `a.gpu`, `a.request` (--gpus and --global-batch-size set) and the framework as above;
// `note` opens the table (not the JSON).
void run_model_plan_on(ModelPlanArgs& a, const std::string& name, const TransformerShape& shape,
                       const std::string& note);

}  // namespace pipescope::cli
