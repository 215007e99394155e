// The schedules the GUI offers (the schedule combo box, the plans view's filter and
// colours): core's built-in schedules (core/schedule.h's schedule_kinds()), so a new
// generator shows up here without a GUI change.
#pragma once

#include <QStringList>
#include <vector>

#include "core/schedule.h"

namespace pipescope::gui {

// In core's order.
std::vector<ScheduleKind> schedule_kinds();
QStringList schedule_names();

}  // namespace pipescope::gui
