// What every generator in core/schedules/ shares: an empty schedule shaped by its spec
// (name, stage -> device map, one list per device) and the R ops that re-materialisation
// inserts. Internal to core/schedules/.
#pragma once

#include "core/schedule.h"

namespace pipescope::schedules {

Schedule empty_schedule(const ScheduleSpec& spec);
// Inserts R(s,m) right before the first backward op of (s,m) when s.r_ops is set.
void add_recompute(Schedule& s);

}  // namespace pipescope::schedules
