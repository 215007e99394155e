// The span of each device in a simulated or measured step: from the start of its first
// op to the end of its last. Zero-bubble schedules are judged by the longest span (the
// zero-bubble paper's bubble; its optimizer post-validation lets the next step start
// on a device as soon as it is done), the step from time 0 by StepReport::step_ns.
// Needs the report's timeline (SimOptions::record_timeline).
#pragma once

#include <cstdint>
#include <vector>

#include "core/report.h"

namespace pipescope {

std::vector<int64_t> device_spans(const StepReport& report);
int64_t longest_span(const StepReport& report);

}  // namespace pipescope
