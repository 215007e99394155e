#include "gui/models/schedule_names.h"

namespace pipescope::gui {

std::vector<ScheduleKind> schedule_kinds() { return pipescope::schedule_kinds(); }  // core's list

QStringList schedule_names() {
  QStringList names;
  for (ScheduleKind k : schedule_kinds()) names << QString::fromStdString(to_string(k));
  return names;
}

}  // namespace pipescope::gui
