#include "gui/models/schedule_names.h"

namespace pipescope::gui {

std::vector<ScheduleKind> schedule_kinds() {
  // The one line to replace with core's list of built-in schedules.
  return {ScheduleKind::GPipe, ScheduleKind::OneFOneB, ScheduleKind::Interleaved, ScheduleKind::ZeroBubbleH1};
}

QStringList schedule_names() {
  QStringList names;
  for (ScheduleKind k : schedule_kinds()) names << QString::fromStdString(to_string(k));
  return names;
}

}  // namespace pipescope::gui
