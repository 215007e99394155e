// Helpers of the simulator (sim/simulator.cpp) kept apart from its walk
// (sim/sim_steps.cpp); internal to sim/.
#pragma once

#include <cstdint>
#include <vector>

#include "core/cost_model.h"
#include "core/hardware.h"
#include "core/report.h"
#include "core/schedule.h"

namespace pipescope {

// dualpipev's overlapped F&B pairs (Schedule::overlapped_backwards), per flat op: how
// much shorter the pair's B runs. Empty when nothing overlaps.
std::vector<int64_t> overlap_savings(const Schedule& s, const CostModel& c);
// A flushed step repeated: step t spans [t T, (t + 1) T); the timeline gets every copy.
void repeat_step(StepReport& r, int steps);
// A flushed schedule's op lists repeated `steps` times without a flush.
Schedule unroll_steps(const Schedule& s, int steps);
// The notes of a prediction: what the profile lacks, how split backward frees, the
// asynchronous weights, blocking p2p, post-validation and what peak memory counts.
void add_prediction_notes(StepReport& r, const Schedule& s, const CostModel& c, const Hardware& h, bool blocking,
                          bool post_validation);

}  // namespace pipescope
