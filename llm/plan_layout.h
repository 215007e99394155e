// The "layout" object of a v2 plan file (schemas/plan.schema.json): the parallel layout
// of an LLM-scale job, in Megatron-LM's words. core/plan.h keeps it as raw JSON
// (core never includes llm/); this reader gives it meaning. Invariant: layout_from_json
// reads what layout_to_json writes, field for field; a bad field throws InputError
// naming the file and its JSON path ("plan.json: layout.t: expected ..."). "schedule" is
// always written (the resolved kind); a file without it (written before it) reads as
// Megatron's default, 1f1b or interleaved by v.
//   std::optional<ParallelLayout> l = plan_layout(load_plan("plan.json"));
#pragma once

#include <optional>

#include "core/json_reader.h"
#include "core/plan.h"
#include "llm/layout.h"

namespace pipescope {

Json layout_to_json(const ParallelLayout& layout);
ParallelLayout layout_from_json(const JsonReader& reader);
// The plan's layout (nullopt for a plan without one, every v1 plan).
std::optional<ParallelLayout> plan_layout(const Plan& plan);

}  // namespace pipescope
