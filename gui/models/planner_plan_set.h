// The profile planner's candidates (planner/search.h, what `pipescope sweep` lists) as the
// plans view's rows (plans_model.h): set row i is candidates[i], in enumeration order; its
// point is the candidate's simulated step and peak per device (GiB on the axis), fits and
// the front as the search marked them; its dimensions schedule (coloured by
// palette.h's schedule_color), K, r, M, v, recompute and offload. A candidate the search
// gave activation offload (memory bound it: planner/candidate_evaluation.h's
// consider_offload) keeps the point it had without it: the first trial's largest
// per-position peak and its step.
//   PlansModel m; m.set_plans(plan_set_of(search_plans(q)));
#pragma once

#include "gui/models/plans_model.h"
#include "planner/search.h"

namespace pipescope::gui {

PlanSet plan_set_of(const SearchResult& result);

}  // namespace pipescope::gui
