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
// What the GUI shows for a schedule: its name, marked "(asynchronous)" for pipedream
// and 2bw (no flush, stale weights); widgets keep the plain name as the item's data.
QString schedule_label(const QString& name);
// The tooltip of a schedule's item: for the asynchronous ones, what they change.
QString schedule_tooltip(const QString& name);

}  // namespace pipescope::gui
