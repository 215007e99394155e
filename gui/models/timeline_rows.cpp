#include "gui/models/timeline_rows.h"

#include <algorithm>

namespace pipescope::gui {

namespace {

// Groups of `group` consecutive tracks from [first, end), labelled "<noun> a" or "<plural> a-b"
// by their number after the prefix (the track's own name when there is one track).
void add_groups(std::vector<TimelineRow>& rows, const std::vector<QString>& names, int first, int end, int group,
                const QString& plural) {
  for (int t = first; t < end; t += group) {
    const int e = std::min(end, t + group);
    TimelineRow r{t, e, names[t]};
    if (e - t > 1) {
      const QString a = names[t].section(' ', 1), b = names[e - 1].section(' ', 1);
      r.label = plural + " " + a + (plural == "devices" ? "-" : " .. ") + b;
    }
    rows.push_back(r);
  }
}

int ceil_div(int a, int b) { return (a + b - 1) / b; }

}  // namespace

std::vector<TimelineRow> timeline_rows(const std::vector<QString>& names, int height_px, int min_row_px,
                                       LinkRows links) {
  const int n = static_cast<int>(names.size());
  int devices = 0;
  while (devices < n && names[devices].startsWith("device ")) ++devices;
  const int others = n - devices;
  const int budget = std::max(1, height_px / std::max(1, min_row_px));
  const bool collapse = links == LinkRows::Collapsed || (links == LinkRows::Auto && n > budget);
  std::vector<TimelineRow> rows;
  int link_rows = collapse ? std::min(others, 1) : others;
  int link_group = 1;
  if (!collapse && devices + others > budget && others > 0) {
    // Expanded on request but too many: devices keep their own rows when they fit with
    // one link row to spare; else links share the budget in proportion to their count.
    const int share = devices < budget ? budget - devices : std::max(1, budget * others / n);
    link_group = ceil_div(others, share);
    link_rows = ceil_div(others, link_group);
  }
  const int device_budget = std::max(1, budget - link_rows);
  const int device_group = devices > 0 ? std::max(1, ceil_div(devices, device_budget)) : 1;
  add_groups(rows, names, 0, devices, device_group, "devices");
  if (others > 0) {
    if (collapse) {
      rows.push_back({devices, n, others == 1 ? names[devices] : QString("links (%1)").arg(others)});
    } else {
      add_groups(rows, names, devices, n, link_group, "links");
    }
  }
  return rows;
}

}  // namespace pipescope::gui
