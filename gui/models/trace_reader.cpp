#include "gui/models/trace_reader.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "core/json_reader.h"

namespace pipescope::gui {

static Timeline to_timeline(const JsonReader& root) {
  const JsonReader list = root.json().is_array() ? root : root["traceEvents"];
  std::map<int64_t, std::string> names;
  for (const JsonReader& e : list.items()) {
    if (e.has("ph") && e["ph"].as_string() == "M" && e.has("name") && e["name"].as_string() == "thread_name") {
      names[e["tid"].as_int()] = e["args"]["name"].as_string();
    }
  }
  Timeline t;
  std::map<int64_t, int> track_of;
  for (const auto& [tid, name] : names) track_of[tid] = t.track_for(name);
  int64_t origin = std::numeric_limits<int64_t>::max();
  // A pipescope_torch run trace holds every timed step (docs/torch-run.md, "The trace
  // calibrate reads"): the timeline is the step the measurement reports, without the
  // step spans themselves; waits are idle time, and the runtime's own spans (posting
  // p2p, the loss, zeroing gradients) draw as the simulator's `runtime` events do.
  int64_t shown_step = -1;
  if (!root.json().is_array() && root.has("otherData") && root["otherData"].has("median_step")) {
    shown_step = root["otherData"]["median_step"].as_int(0);
  }
  for (const JsonReader& e : list.items()) {
    const std::string ph = e["ph"].as_string();
    if (ph == "X") {
      if (shown_step >= 0 && e.has("args") && e["args"].has("step") && e["args"]["step"].as_int() != shown_step) continue;
      const std::string cat = e.has("cat") ? e["cat"].as_string() : "";
      if (cat == "step" || cat == "p2p_wait") continue;
      const int64_t tid = e.has("tid") ? e["tid"].as_int() : 0;
      if (!track_of.count(tid)) track_of[tid] = t.track_for("track " + std::to_string(tid));
      TimelineEvent ev;
      ev.track = track_of[tid];
      ev.category = e.has("cat") ? cat : e["name"].as_string();
      if (ev.category == "p2p_issue" || ev.category == "loss" || ev.category == "zero_grad") ev.category = "runtime";
      if (e.has("args")) {
        const JsonReader args = e["args"];
        if (args.has("stage")) ev.stage = static_cast<int>(args["stage"].as_int());
        if (args.has("microbatch")) ev.microbatch = static_cast<int>(args["microbatch"].as_int());
      }
      ev.start_ns = std::llround(e["ts"].as_double() * 1e3);
      ev.duration_ns = std::llround(e["dur"].as_double(0) * 1e3);
      origin = std::min(origin, ev.start_ns);
      t.events.push_back(ev);
    } else if (ph == "C" && e.has("name")) {
      const std::string name = e["name"].as_string();
      const std::string prefix = "activation bytes, device ";
      if (name.rfind(prefix, 0) != 0) continue;
      MemorySample m;
      m.position = std::stoi(name.substr(prefix.size()));
      m.time_ns = std::llround(e["ts"].as_double() * 1e3);
      m.activation_bytes = static_cast<int64_t>(e["args"]["bytes"].as_double(0));
      if (e["args"].has("transient_bytes")) m.transient_bytes = static_cast<int64_t>(e["args"]["transient_bytes"].as_double(0));
      t.memory.push_back(m);
    }
  }
  if (origin == std::numeric_limits<int64_t>::max()) origin = 0;
  for (TimelineEvent& e : t.events) e.start_ns -= origin;
  for (MemorySample& m : t.memory) m.time_ns = std::max<int64_t>(0, m.time_ns - origin);
  return t;
}

Timeline read_chrome_trace(const std::string& path) { return to_timeline(JsonReader::from_file(path)); }

Timeline chrome_trace_to_timeline(const std::string& text, const std::string& source) {
  return to_timeline(JsonReader::from_text(text, source));
}

}  // namespace pipescope::gui
