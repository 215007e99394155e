// The discrete-event pipeline simulator: replays a Schedule with a CostModel on a
// Hardware description and predicts one training step. Each device walks its op list
// in order; an op starts when the device is free and its input (activation from the
// previous stage, or gradient from the next) has arrived. Transfers take
// latency + bytes / bandwidth and serialise on each directed link; they overlap
// compute. Time is integer nanoseconds and never goes backwards.
//   Schedule s = make_1f1b(4, 32);
//   StepReport p = simulate(s, costs, hardware);
#pragma once

#include "core/cost_model.h"
#include "core/hardware.h"
#include "core/report.h"
#include "core/schedule.h"

namespace pipescope {

struct SimOptions {
  bool record_timeline = true;  // events and memory samples (off for searches)
  std::string model;            // copied into the report
};

// `schedule` must be valid (validate_schedule) and have one model stage per cost
// entry; throws InputError otherwise.
StepReport simulate(const Schedule& schedule, const CostModel& costs, const Hardware& hardware,
                    const SimOptions& options = {});

}  // namespace pipescope
