// Reads a Chrome trace (trace-event JSON) back into a Timeline, so a measured run's
// trace can be drawn beside the prediction. Tracks come from "thread_name" metadata
// in tid order (tids without a name become "track <tid>"); "X" events become events
// with their "cat" as category and args.stage / args.microbatch; counters named
// "activation bytes, device d" become memory samples (args.bytes, and
// args.transient_bytes when present). Times are shifted so the earliest event starts
// at 0. Throws InputError naming the file and JSON path.
#pragma once

#include <string>

#include "core/report.h"

namespace pipescope::gui {

Timeline read_chrome_trace(const std::string& path);
Timeline chrome_trace_to_timeline(const std::string& text, const std::string& source);

}  // namespace pipescope::gui
