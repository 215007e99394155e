#include "core/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "core/error.h"
#include "core/schedule_io.h"

namespace pipescope {

int Timeline::track_for(const std::string& name) {
  auto it = std::find(tracks.begin(), tracks.end(), name);
  if (it != tracks.end()) return static_cast<int>(it - tracks.begin());
  tracks.push_back(name);
  return static_cast<int>(tracks.size()) - 1;
}

std::string device_track(int device, int replica) {
  return "device " + std::to_string(device) + (replica > 0 ? " replica " + std::to_string(replica) : "");
}

std::string link_track(int from, int to, int replica) {
  return "link " + std::to_string(from) + "->" + std::to_string(to) +
         (replica > 0 ? " replica " + std::to_string(replica) : "");
}

std::string allreduce_track(int device, int replica) {
  return "allreduce " + std::to_string(device) + (replica > 0 ? " replica " + std::to_string(replica) : "");
}

std::string host_track(int device, bool to_host) {
  return to_host ? "host " + std::to_string(device) + "->" : "host ->" + std::to_string(device);
}

TimelineRecorder::TimelineRecorder(Timeline& timeline, int devices) : t_(timeline), devices_(devices) {
  for (int d = 0; d < devices; ++d) t_.tracks.push_back(device_track(d));
  if (devices <= 256) link_track_.assign(static_cast<std::size_t>(devices) * devices, -1);
}

void TimelineRecorder::op(int device, int replica, const Op& op, int64_t start_ns, int64_t duration_ns) {
  const int track = replica == 0 ? device : t_.track_for(device_track(device, replica));
  t_.events.push_back({track, to_string(op.kind), op.stage, op.microbatch, start_ns, duration_ns});
}

void TimelineRecorder::transfer(int from, int to, int stage, int mb, int64_t start_ns, int64_t duration_ns,
                                int replica) {
  int track;
  if (replica > 0) {
    track = t_.track_for(link_track(from, to, replica));
  } else if (!link_track_.empty() && from < devices_ && to < devices_) {
    int& t = link_track_[static_cast<std::size_t>(from) * devices_ + to];
    if (t < 0) t = t_.track_for(link_track(from, to));
    track = t;
  } else {
    track = t_.track_for(link_track(from, to));
  }
  t_.events.push_back({track, "transfer", stage, mb, start_ns, duration_ns});
}

void TimelineRecorder::allreduce(int device, int replica, int64_t start_ns, int64_t duration_ns) {
  t_.events.push_back({t_.track_for(allreduce_track(device, replica)), "allreduce", -1, -1, start_ns, duration_ns});
}

void TimelineRecorder::optimizer(int device, int replica, int64_t start_ns, int64_t duration_ns) {
  const int track = replica == 0 ? device : t_.track_for(device_track(device, replica));
  t_.events.push_back({track, "optimizer", -1, -1, start_ns, duration_ns});
}

void TimelineRecorder::runtime(int device, int stage, int microbatch, int64_t start_ns, int64_t duration_ns) {
  t_.events.push_back({device, "runtime", stage, microbatch, start_ns, duration_ns});
}

void TimelineRecorder::memory(int device, int64_t time_ns, int64_t activation_bytes, int64_t transient_bytes,
                              int64_t weight_version_bytes) {
  t_.memory.push_back({device, time_ns, activation_bytes, transient_bytes, weight_version_bytes});
}

void TimelineRecorder::host_transfer(int device, bool to_host, int stage, int mb, int64_t start_ns,
                                     int64_t duration_ns) {
  t_.events.push_back({t_.track_for(host_track(device, to_host)), to_host ? "offload" : "reload", stage, mb, start_ns,
                       duration_ns});
}

void TimelineRecorder::host_memory(int device, int64_t time_ns, int64_t host_bytes) {
  t_.host_memory.push_back({device, time_ns, host_bytes});
}

void set_step_ends(StepReport& r, std::vector<int64_t> ends) {
  r.steps = std::max<int>(1, static_cast<int>(ends.size()));
  r.total_ns = ends.empty() ? 0 : ends.back();
  r.step_ns = r.total_ns / r.steps;
  r.throughput_samples_per_s =
      r.total_ns > 0 ? static_cast<double>(r.batch_size) * r.steps * 1e9 / static_cast<double>(r.total_ns) : 0.0;
  r.step_end_ns = std::move(ends);
  r.steady_state_step_ns = r.startup_ns = 0;
  r.steady_state_throughput_samples_per_s = 0;
  if (r.steps < 2) return;
  std::vector<int64_t> diffs;
  const std::size_t last = r.step_end_ns.size() - (r.steps >= 3 ? 1 : 0);
  for (std::size_t t = 1; t < last; ++t) diffs.push_back(r.step_end_ns[t] - r.step_end_ns[t - 1]);
  std::sort(diffs.begin(), diffs.end());
  r.steady_state_step_ns = diffs[diffs.size() / 2];
  r.startup_ns = r.step_end_ns.front() - r.steady_state_step_ns;
  r.steady_state_throughput_samples_per_s =
      r.steady_state_step_ns > 0 ? static_cast<double>(r.batch_size) * 1e9 / r.steady_state_step_ns : 0.0;
}

bool StepReport::fits() const {
  return std::all_of(positions.begin(), positions.end(), [](const PositionReport& s) { return s.fits; });
}

int64_t StepReport::peak_memory_bytes() const {
  int64_t peak = 0;
  for (const PositionReport& s : positions) peak = std::max(peak, s.peak_memory_bytes);
  return peak;
}

static double ns_to_ms(int64_t ns) { return static_cast<double>(ns) / 1e6; }
static int64_t ms_to_ns_exact(double ms) { return std::llround(ms * 1e6); }

Json report_to_json(const StepReport& r) {
  Json stages = Json::array();
  for (const PositionReport& s : r.positions) {
    Json ranges = Json::array();
    for (auto [a, b] : s.layers) ranges.push_back({a, b});
    Json j = {{"index", s.index},
              {"layers", s.layers.empty() ? Json::array() : Json{s.layers[0].first, s.layers.back().second}},
              {"hardware_devices", s.hardware_devices},
              {"busy_ms", ns_to_ms(s.busy_ns)},
              {"bubble_fraction", s.bubble_fraction},
              {"static_bytes", s.static_bytes},
              {"weight_bytes", s.weight_bytes},
              {"gradient_bytes", s.gradient_bytes},
              {"optimizer_bytes", s.optimizer_bytes},
              {"peak_activation_bytes", s.peak_activation_bytes},
              {"transient_bytes", s.transient_bytes},
              {"peak_memory_bytes", s.peak_memory_bytes},
              {"fits", s.fits}};
    if (r.offload != "none") {
      j["offloaded_bytes"] = s.offloaded_bytes;
      j["host_peak_bytes"] = s.host_peak_bytes;
      j["offload_delay_ms"] = ns_to_ms(s.offload_delay_ns);
    }
    if (r.weight_update != WeightUpdate::Flush) {
      j["weight_versions"] = s.weight_versions;
      j["weight_version_bytes"] = s.weight_version_bytes;
    }
    if (s.layers.size() > 1) j["chunk_layers"] = ranges;
    stages.push_back(std::move(j));
  }
  Json out = {{"format", "pipescope." + r.kind},
              {"version", 1},
              {"model", r.model},
              {"schedule", r.schedule},
              {"devices", r.num_positions},
              {"chunks", r.chunks},
              {"microbatches", r.microbatches},
              {"microbatch_size", json_number(r.microbatch_size)},
              {"batch_size", r.batch_size},
              {"recompute", has_r_ops(r.recompute, "report: recompute")},
              {"memory_limit_bytes", r.memory_limit_bytes},
              {"step_time_ms", ns_to_ms(r.step_ns)},
              {"throughput_samples_per_s", r.throughput_samples_per_s},
              {"bubble_fraction", r.bubble_fraction},
              {"simulated_ops", r.simulated_ops},
              {"peak_memory_bytes", r.peak_memory_bytes()},
              {"fits", r.fits()},
              {"stages", std::move(stages)},
              {"notes", r.notes}};
  if (r.weight_update != WeightUpdate::Flush) out["weight_update"] = to_string(r.weight_update);
  if (r.optimizer_step != "synchronized") out["optimizer_step"] = r.optimizer_step;
  if (r.offload != "none") out["offload"] = r.offload;
  if (r.offload != "none" && r.host_memory_limit_bytes > 0) out["host_memory_limit_bytes"] = r.host_memory_limit_bytes;
  if (r.offload != "none" && r.host_node_memory_limit_bytes > 0) {
    out["host_node_memory_limit_bytes"] = r.host_node_memory_limit_bytes;
  }
  if (r.steps > 1) {
    out["steps"] = r.steps;
    out["total_time_ms"] = ns_to_ms(r.total_ns);
    Json ends = Json::array();
    for (int64_t e : r.step_end_ns) ends.push_back(ns_to_ms(e));
    out["step_end_ms"] = std::move(ends);
    out["steady_state_step_time_ms"] = ns_to_ms(r.steady_state_step_ns);
    out["steady_state_throughput_samples_per_s"] = r.steady_state_throughput_samples_per_s;
    out["startup_ms"] = ns_to_ms(r.startup_ns);
  }
  return out;
}

StepReport report_from_json(const JsonReader& r) {
  StepReport rep;
  std::string format = r["format"].as_string();
  if (format != "pipescope.prediction" && format != "pipescope.measurement") {
    r["format"].fail("expected \"pipescope.prediction\" or \"pipescope.measurement\", got \"" +
                     format + "\"");
  }
  r["version"].as_int(1, 1);
  rep.kind = format.substr(std::string("pipescope.").size());
  rep.model = r.has("model") ? r["model"].as_string() : "";
  rep.schedule = r["schedule"].as_string();
  rep.num_positions = static_cast<int>(r["devices"].as_int(1, kMaxDevices));
  rep.chunks = r.has("chunks") ? static_cast<int>(r["chunks"].as_int(1, 64)) : 1;
  rep.microbatches = static_cast<int>(r["microbatches"].as_int(1, 1 << 30));
  rep.microbatch_size = r["microbatch_size"].as_double(0.0);
  rep.batch_size = r["batch_size"].as_int(1);
  rep.recompute = recompute_from_r_ops(r.has("recompute") && r["recompute"].as_bool());
  rep.memory_limit_bytes = r.has("memory_limit_bytes") ? r["memory_limit_bytes"].as_int(0) : 0;
  rep.step_ns = ms_to_ns_exact(r["step_time_ms"].as_double(0.0, 1e12));
  rep.throughput_samples_per_s = r["throughput_samples_per_s"].as_double(0.0);
  rep.bubble_fraction = r["bubble_fraction"].as_double(-1.0, 1.0);
  rep.simulated_ops = r.has("simulated_ops") ? r["simulated_ops"].as_int(0) : 0;
  if (r.has("weight_update")) rep.weight_update = weight_update_from_json(r["weight_update"]);
  if (r.has("optimizer_step")) rep.optimizer_step = r["optimizer_step"].as_string();
  if (r.has("offload")) rep.offload = r["offload"].as_string();
  if (r.has("host_memory_limit_bytes")) rep.host_memory_limit_bytes = r["host_memory_limit_bytes"].as_int(0);
  if (r.has("host_node_memory_limit_bytes")) rep.host_node_memory_limit_bytes = r["host_node_memory_limit_bytes"].as_int(0);
  if (r.has("steps")) {
    rep.steps = static_cast<int>(r["steps"].as_int(1, 1 << 20));
    rep.total_ns = ms_to_ns_exact(r["total_time_ms"].as_double(0.0, 1e12));
    rep.steady_state_step_ns = ms_to_ns_exact(r["steady_state_step_time_ms"].as_double(0.0, 1e12));
    rep.steady_state_throughput_samples_per_s = r["steady_state_throughput_samples_per_s"].as_double(0.0);
    rep.startup_ns = ms_to_ns_exact(r["startup_ms"].as_double(-1e12, 1e12));
    if (r.has("step_end_ms")) {
      for (const JsonReader& e : r["step_end_ms"].items()) rep.step_end_ns.push_back(ms_to_ns_exact(e.as_double(0.0, 1e12)));
    }
  }
  for (const JsonReader& s : r["stages"].items()) {
    PositionReport st;
    st.index = static_cast<int>(s["index"].as_int(0, kMaxDevices));
    if (s.has("chunk_layers")) {
      for (const JsonReader& range : s["chunk_layers"].items()) {
        if (range.size() != 2) range.fail("expected [first, end)");
        st.layers.emplace_back(range.items()[0].as_int(0, 1 << 30), range.items()[1].as_int(0, 1 << 30));
      }
    } else {
      JsonReader range = s["layers"];
      if (range.size() != 2) range.fail("expected [first, end)");
      st.layers.emplace_back(range.items()[0].as_int(0, 1 << 30), range.items()[1].as_int(0, 1 << 30));
    }
    if (s.has("hardware_devices")) {
      for (int64_t d : s["hardware_devices"].as_ints(0)) st.hardware_devices.push_back(static_cast<int>(d));
    }
    st.busy_ns = ms_to_ns_exact(s["busy_ms"].as_double(0.0, 1e12));
    st.bubble_fraction = s["bubble_fraction"].as_double(-1.0, 1.0);
    st.static_bytes = s.has("static_bytes") ? s["static_bytes"].as_int(0) : 0;
    st.peak_activation_bytes = s["peak_activation_bytes"].as_int(0);
    st.peak_memory_bytes = s["peak_memory_bytes"].as_int(0);
    auto optional_bytes = [&](const char* key) { return s.has(key) ? s[key].as_int(0) : 0; };
    st.weight_bytes = optional_bytes("weight_bytes");
    st.gradient_bytes = optional_bytes("gradient_bytes");
    st.optimizer_bytes = optional_bytes("optimizer_bytes");
    st.transient_bytes = optional_bytes("transient_bytes");
    st.weight_version_bytes = optional_bytes("weight_version_bytes");
    st.weight_versions = s.has("weight_versions") ? static_cast<int>(s["weight_versions"].as_int(1, 1 << 30)) : 1;
    st.fits = s.has("fits") ? s["fits"].as_bool() : true;
    st.offloaded_bytes = optional_bytes("offloaded_bytes");
    st.host_peak_bytes = optional_bytes("host_peak_bytes");
    if (s.has("offload_delay_ms")) st.offload_delay_ns = ms_to_ns_exact(s["offload_delay_ms"].as_double(0.0, 1e12));
    rep.positions.push_back(std::move(st));
  }
  if (r.has("notes")) {
    for (const JsonReader& n : r["notes"].items()) rep.notes.push_back(n.as_string());
  }
  return rep;
}

StepReport load_report(const std::string& path) { return report_from_json(JsonReader::from_file(path)); }

std::string format_bytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int u = 0;
  while (std::fabs(bytes) >= 1024.0 && u < 5) {
    bytes /= 1024.0;
    ++u;
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.2f %s", bytes, units[u]);
  return buf;
}

std::string format_ms(int64_t ns) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3f", static_cast<double>(ns) / 1e6);
  return buf;
}

std::string report_table(const StepReport& r) {
  std::ostringstream out;
  char buf[256];
  out << r.kind << ": " << r.model << ", " << r.schedule << ", K = " << r.num_positions;
  if (!r.positions.empty() && r.positions[0].hardware_devices.size() > 1) out << ", r = " << r.positions[0].hardware_devices.size();
  if (r.chunks > 1) out << ", v = " << r.chunks;
  out << ", M = " << r.microbatches << ", micro-batch " << r.microbatch_size << " (batch "
      << r.batch_size << ")" << (r.recompute == Recompute::Full ? ", re-materialisation on" : "") << "\n";
  std::snprintf(buf, sizeof buf, "step time %s ms   throughput %.2f samples/s   bubble %.2f%%   ops %lld\n",
                format_ms(r.step_ns).c_str(), r.throughput_samples_per_s, 100.0 * r.bubble_fraction,
                static_cast<long long>(r.simulated_ops));
  out << buf;
  if (r.steps > 1) {
    std::snprintf(buf, sizeof buf,
                  "%d steps in %s ms: steady-state step %s ms (%.2f samples/s), start-up %s ms%s\n", r.steps,
                  format_ms(r.total_ns).c_str(), format_ms(r.steady_state_step_ns).c_str(),
                  r.steady_state_throughput_samples_per_s, format_ms(r.startup_ns).c_str(),
                  r.weight_update != WeightUpdate::Flush   ? ", no flush between steps"
                  : r.optimizer_step == "post-validation" ? ", post-validation: each position steps after its own last op"
                                                          : ", a flush between steps");
    out << buf;
  }
  const bool versions = r.weight_update != WeightUpdate::Flush;
  out << "\nstage  layers        busy ms     bubble   static      peak act.   peak memory"
      << (versions ? "   weight versions" : "") << "\n";
  for (const PositionReport& s : r.positions) {
    std::string layers;
    for (std::size_t i = 0; i < s.layers.size(); ++i) {
      char range[64];
      std::snprintf(range, sizeof range, "%s[%d,%d)", i ? "," : "", s.layers[i].first, s.layers[i].second);
      layers.append(range);
    }
    std::snprintf(buf, sizeof buf, "%5d  %-12s %9s   %6.2f%%   %-10s  %-10s  %-10s%s\n", s.index,
                  layers.c_str(), format_ms(s.busy_ns).c_str(), 100.0 * s.bubble_fraction,
                  format_bytes(static_cast<double>(s.static_bytes)).c_str(),
                  format_bytes(static_cast<double>(s.peak_activation_bytes)).c_str(),
                  format_bytes(static_cast<double>(s.peak_memory_bytes)).c_str(),
                  s.fits ? "" : "  DOES NOT FIT");
    std::string line = buf;
    if (versions) {
      line.pop_back();  // the newline
      std::snprintf(buf, sizeof buf, "  %d (+%s)\n", s.weight_versions,
                    format_bytes(static_cast<double>(s.weight_version_bytes)).c_str());
      line.append(buf);
    }
    out << line;
  }
  if (r.memory_limit_bytes > 0) {
    out << "device memory " << format_bytes(static_cast<double>(r.memory_limit_bytes))
        << (r.fits() ? ": every stage fits\n" : ": some stages do not fit\n");
  }
  if (r.offload != "none") {
    for (const PositionReport& s : r.positions) {
      out << "offload " << r.offload << ": position " << s.index << " sent "
          << format_bytes(static_cast<double>(s.offloaded_bytes)) << " to host, host peak "
          << format_bytes(static_cast<double>(s.host_peak_bytes));
      if (r.host_memory_limit_bytes > 0) out << " of " << format_bytes(static_cast<double>(r.host_memory_limit_bytes));
      out << ", reloads late by " << format_ms(s.offload_delay_ns) << " ms\n";
    }
  }
  for (const std::string& n : r.notes) out << "note: " << n << "\n";
  return out.str();
}

std::string chrome_trace(const StepReport& r) {
  // Trace-event format: "X" complete events in microseconds, one tid per track.
  // Events are dumped one at a time into the text (the same bytes as dumping one
  // {"displayTimeUnit", "traceEvents"} object, whose keys nlohmann sorts), so memory
  // stays near the size of the file instead of a JSON tree of every event.
  std::string out = "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[";
  bool first = true;
  auto add = [&](const Json& event) {
    if (!first) out += ',';
    first = false;
    out += event.dump();
  };
  add({{"ph", "M"}, {"pid", 0}, {"name", "process_name"}, {"args", {{"name", "pipescope " + r.kind}}}});
  for (std::size_t t = 0; t < r.timeline.tracks.size(); ++t) {
    add({{"ph", "M"}, {"pid", 0}, {"tid", t}, {"name", "thread_name"},
         {"args", {{"name", r.timeline.tracks[t]}}}});
    add({{"ph", "M"}, {"pid", 0}, {"tid", t}, {"name", "thread_sort_index"},
         {"args", {{"sort_index", t}}}});
  }
  for (const TimelineEvent& e : r.timeline.events) {
    std::string name = e.category;
    if (e.microbatch >= 0) name += " mb" + std::to_string(e.microbatch);
    if (e.stage >= 0) name += " s" + std::to_string(e.stage);
    add({{"ph", "X"},
         {"pid", 0},
         {"tid", e.track},
         {"name", name},
         {"cat", e.category},
         {"ts", static_cast<double>(e.start_ns) / 1e3},
         {"dur", static_cast<double>(e.duration_ns) / 1e3},
         {"args", {{"stage", e.stage}, {"microbatch", e.microbatch}}}});
  }
  for (const MemorySample& m : r.timeline.memory) {
    add({{"ph", "C"},
         {"pid", 0},
         {"name", "activation bytes, device " + std::to_string(m.position)},
         {"ts", static_cast<double>(m.time_ns) / 1e3},
         {"args", {{"bytes", m.activation_bytes}, {"transient_bytes", m.transient_bytes}}}});
  }
  for (const HostSample& h : r.timeline.host_memory) {
    add({{"ph", "C"},
         {"pid", 0},
         {"name", "host bytes, device " + std::to_string(h.position)},
         {"ts", static_cast<double>(h.time_ns) / 1e3},
         {"args", {{"bytes", h.host_bytes}}}});
  }
  out += "]}\n";
  return out;
}

}  // namespace pipescope
