// The prediction's report assembled from what the simulator's walk (sim/simulator.cpp)
// leaves behind: the header, the step ends, one row per position (layers, busy time and
// bubble, static and peak bytes) and the notes. Internal to sim/; no time is computed here.
#pragma once

#include <cstdint>
#include <vector>

#include "core/cost_model.h"
#include "core/hardware.h"
#include "core/report.h"
#include "core/schedule.h"
#include "sim/simulator.h"

namespace pipescope {

// The walk's per-position totals (its own vectors, by reference).
struct WalkTotals {
  const std::vector<int64_t>& busy;        // per position: time in ops
  const std::vector<int64_t>& peak_act;    // the stash's peak
  const std::vector<int64_t>& peak_total;  // everything's peak above the static bytes
  const std::vector<int>& peak_versions;   // most weight versions held at once
  const std::vector<int64_t>& step_end;    // per step: when it ended (the last: the run's end)
  int64_t end;                             // the run's end
  const std::vector<std::vector<int>>& stages_of;  // per position: its stages
};

// Fills `r` (its timeline already recorded) for the walk of `s`; offload's numbers are the caller's.
void fill_prediction(StepReport& r, const Schedule& s, const CostModel& c, const Hardware& h, const SimOptions& o,
                     const WalkTotals& w, bool blocking, bool post_validation);

}  // namespace pipescope
