#include "gui/models/schedule_names.h"

namespace pipescope::gui {

std::vector<ScheduleKind> schedule_kinds() { return pipescope::schedule_kinds(); }  // core's list

QStringList schedule_names() {
  QStringList names;
  for (ScheduleKind k : schedule_kinds()) names << QString::fromStdString(to_string(k));
  return names;
}

QString schedule_label(const QString& name) {
  const ScheduleKind kind = parse_schedule_kind(name.toStdString());
  return is_asynchronous(kind) ? name + " (asynchronous)" : name;
}

QString schedule_tooltip(const QString& name) {
  if (!is_asynchronous(parse_schedule_kind(name.toStdString()))) return {};
  return "Asynchronous: steps overlap without a flush and backward passes use stale weights "
         "(not synchronous SGD); peak memory counts the extra weight versions";
}

}  // namespace pipescope::gui
