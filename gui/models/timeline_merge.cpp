#include "gui/models/timeline_merge.h"

#include <map>
#include <vector>

namespace pipescope::gui {

Timeline interleave_timelines(const Timeline& a, const std::string& a_label, const Timeline& b,
                              const std::string& b_label) {
  Timeline out;
  std::vector<int> a_to(a.tracks.size(), -1), b_to(b.tracks.size(), -1);
  std::map<std::string, int> b_index;
  for (int t = 0; t < static_cast<int>(b.tracks.size()); ++t) b_index.emplace(b.tracks[t], t);
  for (int t = 0; t < static_cast<int>(a.tracks.size()); ++t) {
    a_to[t] = static_cast<int>(out.tracks.size());
    out.tracks.push_back(a.tracks[t] + " " + a_label);
    auto match = b_index.find(a.tracks[t]);
    if (match != b_index.end() && b_to[match->second] < 0) {
      b_to[match->second] = static_cast<int>(out.tracks.size());
      out.tracks.push_back(b.tracks[match->second] + " " + b_label);
    }
  }
  for (int t = 0; t < static_cast<int>(b.tracks.size()); ++t) {
    if (b_to[t] >= 0) continue;
    b_to[t] = static_cast<int>(out.tracks.size());
    out.tracks.push_back(b.tracks[t] + " " + b_label);
  }
  auto add = [&](const Timeline& from, const std::vector<int>& to) {
    for (TimelineEvent e : from.events) {
      if (e.track < 0 || e.track >= static_cast<int>(to.size())) continue;
      e.track = to[e.track];
      out.events.push_back(e);
    }
  };
  add(a, a_to);
  add(b, b_to);
  return out;
}

}  // namespace pipescope::gui
