// A `pipescope llm-plan` search (llm/layout_search.h's LlmSearchResult, as
// llm/llm_plan_json.h reads a `pipescope.llm_plan` file) as the plans view's rows
// (plans_model.h): set row i is best[i], fastest first; its point is the layout's exact
// step and peak per GPU, in GB (10^9 bytes) on the axis as llm-plan's table quotes it;
// every row fits (the search keeps only layouts that do) and none is marked on a front
// (best holds the fastest, not a front); its dimensions t, d, cp, ep and sharding.
//   PlansModel m; m.set_plans(plan_set_of(file.result)); view->set_description(llm_plan_description(file));
#pragma once

#include <QString>

#include "gui/models/plans_model.h"
#include "llm/layout_search.h"
#include "llm/llm_plan_json.h"

namespace pipescope::gui {

PlanSet plan_set_of(const LlmSearchResult& result);
// What the llm-plans tab says about a file: the job, the search's counts, then the why lines.
QString llm_plan_description(const LlmPlanFile& file);

}  // namespace pipescope::gui
