// Which rows a Gantt chart draws when a timeline has more tracks than its height
// has room for labelled rows: device tracks first, then the links (and any other
// track). Links collapse into one "links" row when asked, or (Auto) when the
// tracks do not all fit; then consecutive devices (and links, if expanded on
// request, in the rows the devices leave) group into rows of g tracks, g the
// smallest that fits, each labelled "devices 0-3" or "links 0->1 .. 2->3". Invariant: the rows tile [0, tracks) in order, each row is at least
// `min_row_px` high when rows.size() * min_row_px <= height_px allows it, and every
// row has a label.
//   auto rows = timeline_rows(names, 420, 14, LinkRows::Auto);
#pragma once

#include <QString>
#include <vector>

namespace pipescope::gui {

enum class LinkRows { Auto, Expanded, Collapsed };

struct TimelineRow {
  int first_track = 0;
  int end_track = 0;  // one past the last
  QString label;
  int tracks() const { return end_track - first_track; }
};

// A track is a device track when its name starts with "device ".
std::vector<TimelineRow> timeline_rows(const std::vector<QString>& track_names, int height_px, int min_row_px,
                                       LinkRows links);

}  // namespace pipescope::gui
