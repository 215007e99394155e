// Replaying a measured step: the simulator fed with the op times a run measured.
// with_measured_op_times writes, for every model stage and op kind, the mean duration
// of that kind's ops in a measured timeline into a copy of the cost model (kinds the
// timeline lacks keep the model's time). Simulating it splits a prediction's error in
// two: replayed - predicted is what the op times explain, measured - replayed what the
// pipeline adds (waiting, transfers, the executor's own work, ops whose durations vary).
// Invariant: replaying a prediction through its own timeline gives it back exactly.
//   StepReport r = simulate(schedule, with_measured_op_times(costs, measured.timeline), hw);
#pragma once

#include "core/cost_model.h"
#include "core/report.h"

namespace pipescope {

CostModel with_measured_op_times(CostModel costs, const Timeline& measured);

}  // namespace pipescope
