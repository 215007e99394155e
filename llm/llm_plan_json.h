// The pipescope.llm_plan file: what `pipescope llm-plan --json` prints (schemas/
// llm_plan.schema.json) and what pipescope-gui --llm-plan reads. Writer and reader live
// here together. Invariants: the reader reads what the writer writes (steps to the
// nanosecond, every other number exactly), and writing what it read gives the same
// bytes; a bad field throws InputError naming the file and its JSON path
// ("r.json: best[2].step_ms: expected a number >= 0, got -1"). The dimension table and
// the smallest need (LlmSearchResult::dimensions, smallest_*) are not in the file.
//   LlmPlanFile f = read_llm_plan_result("r.json");   // f.result.best[0].layout
//   std::cout << llm_plan_result_to_json(f).dump(1);
#pragma once

#include <string>

#include "core/json_reader.h"
#include "llm/layout_check.h"
#include "llm/layout_search.h"

namespace pipescope {

struct LlmPlanFile {
  std::string model;        // TransformerShape::name
  std::string gpu;          // the --gpu given (a name or a file)
  int gpus = 0;             // t x cp x d x p of every layout
  int global_batch = 0;     // b x M x d of every layout
  Framework framework = Framework::Megatron;
  LlmSearchResult result;   // best, why, lost (the runner-ups), the counts, capacity
};

Json llm_plan_result_to_json(const LlmPlanFile& file);
LlmPlanFile llm_plan_result_from_json(const JsonReader& reader);
LlmPlanFile read_llm_plan_result(const std::string& path);

}  // namespace pipescope
