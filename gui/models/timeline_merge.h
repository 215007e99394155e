// Puts two timelines of the same plan row by row, for Compare: each track of `a`
// ("device 0 predicted") is followed by the track of `b` with the same name
// ("device 0 measured"); tracks only `b` has come last. Events keep their times and
// move to their new track; memory samples are dropped (the chart shows one run).
//   Timeline rows = interleave_timelines(prediction.timeline, "predicted", trace, "measured");
#pragma once

#include <string>

#include "core/report.h"

namespace pipescope::gui {

Timeline interleave_timelines(const Timeline& a, const std::string& a_label, const Timeline& b,
                              const std::string& b_label);

}  // namespace pipescope::gui
