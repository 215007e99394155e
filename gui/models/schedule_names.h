// The schedules the GUI offers (the schedule combo box, the plans view's filter and
// colours): the one place in gui/ that lists them. Today these are the names
// core's parse_schedule_kind accepts; when core lists its built-in schedules, this
// becomes one call to that list.
#pragma once

#include <QStringList>
#include <vector>

#include "core/schedule.h"

namespace pipescope::gui {

// In core's order: gpipe, 1f1b, interleaved, zb-h1.
std::vector<ScheduleKind> schedule_kinds();
QStringList schedule_names();

}  // namespace pipescope::gui
