// The plans view's search: exactly `pipescope sweep`'s (planner/search.h) for the
// GUI's inputs. D = the hardware's devices (8 on ideal hardware), N = micro-batch
// size x M of the plan shown, every built-in schedule, interleaved chunks 2 and 4,
// re-materialisation tried both ways, the GUI's partitioner (and what-if, when set,
// applied to the hardware). Without what-if the request equals
//   pipescope sweep --profile P [--hardware H] -D D -N N --partition X
// and its candidates and Pareto front are that command's rows and marked rows.
//   SearchRequest q = plans_request(inputs);  SearchResult r = search_plans(q);
#pragma once

#include <cstdint>

#include "gui/models/plan_evaluation.h"
#include "planner/search.h"

namespace pipescope::gui {

inline constexpr int kIdealDevices = 8;  // devices searched on ideal hardware

// Throws InputError when there is no profile.
SearchRequest plans_request(const PlanInputs& inputs);
int64_t plans_batch(const PlanInputs& inputs);  // N = micro-batch size x M, at least 1

// The choice that rebuilds candidate `c` in the controls (K, r, M, micro-batch size
// N / M, schedule, chunks, re-materialisation).
PlanChoice choice_of(const Candidate& c, int64_t batch, const PlanChoice& base);

// The inputs that show candidate `c` of the search made from `current`: its plan as it
// is, with the profile its ranges index (reordered_profile: a graph candidate's layers
// in c.layer_order), the controls' choice rebuilt by choice_of.
PlanInputs candidate_inputs(const PlanInputs& current, const Candidate& c, int64_t batch);

}  // namespace pipescope::gui
