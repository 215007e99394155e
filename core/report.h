// A StepReport describes one training step of a plan, predicted by the simulator or
// measured by an executor; both sides fill the same struct, so their JSON files have
// the same keys and their Chrome traces the same tracks, and `compare` can put them
// side by side. Times are integer nanoseconds inside, milliseconds in files.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/json_reader.h"
#include "core/recompute.h"
#include "core/schedule.h"

namespace pipescope {

// One slice of a timeline: an op on a device track, or a transfer on a link track.
struct TimelineEvent {
  int track = 0;
  // forward, backward, backward_input, backward_weight, recompute, transfer, allreduce, optimizer, runtime (core/runtime_costs.h).
  // A string, not an enum: it is the Chrome trace's "cat" vocabulary that trace and report files carry.
  std::string category;
  int stage = -1;
  int microbatch = -1;
  int64_t start_ns = 0;
  int64_t duration_ns = 0;
};

struct MemorySample {
  int position = 0;  // pipeline position (JSON: "device")
  int64_t time_ns = 0;
  int64_t activation_bytes = 0;
  // Tensors held beyond the stash at that moment (core/op_rules.h's transients); a
  // prediction's sample at an op's start carries the op's highest point, so the largest
  // static + activation + transient of a device equals its peak_memory_bytes.
  int64_t transient_bytes = 0;
  // Extra weight versions held (asynchronous schedules: kept copies; 0 otherwise).
  int64_t weight_version_bytes = 0;
};

// What a device has offloaded to host memory at a moment (core/offload.h): a sample at
// each offload's arrival on the host and each reload's end, in time order per device.
struct HostSample {
  int position = 0;  // pipeline position
  int64_t time_ns = 0;
  int64_t host_bytes = 0;
};

struct Timeline {
  std::vector<std::string> tracks;  // "device 0", ..., then "link 0->1", ...
  std::vector<TimelineEvent> events;
  std::vector<MemorySample> memory;
  std::vector<HostSample> host_memory;  // empty without offload
  int track_for(const std::string& name);  // finds or appends
};

// Track names, made here only: "device 1", "device 1 replica 2", "link 0->1",
// "allreduce 1" (replica > 0 adds " replica i" to a device or all-reduce track), and a
// device's two host tracks "host 1->" (offloads, device to host) and "host ->1" (reloads).
std::string device_track(int device, int replica = 0);
std::string link_track(int from_device, int to_device, int replica = 0);
std::string allreduce_track(int device, int replica = 0);
std::string host_track(int device, bool to_host);

// The one observer of a step's timeline: the simulator and the executor's merge feed it
// op, transfer, all-reduce and memory events; it owns the track numbering. Devices
// 0..K-1 get tracks 0..K-1 up front; other tracks appear in order of first use.
//   TimelineRecorder rec(report.timeline, K);  rec.op(0, 0, op, start, duration);
class TimelineRecorder {
 public:
  TimelineRecorder(Timeline& timeline, int devices);
  void op(int device, int replica, const Op& op, int64_t start_ns, int64_t duration_ns);
  void transfer(int from_device, int to_device, int stage, int microbatch, int64_t start_ns, int64_t duration_ns,
                int replica = 0);
  void allreduce(int device, int replica, int64_t start_ns, int64_t duration_ns);
  // The optimizer step at the end of the step, on the device's own track.
  void optimizer(int device, int replica, int64_t start_ns, int64_t duration_ns);
  // Time the runtime spends around the ops (core/runtime_costs.h) on the device's own
  // track; stage and micro-batch name the op it serves (-1: the step's own terms).
  void runtime(int device, int stage, int microbatch, int64_t start_ns, int64_t duration_ns);
  void memory(int device, int64_t time_ns, int64_t activation_bytes, int64_t transient_bytes = 0,
              int64_t weight_version_bytes = 0);
  // An offload (to_host) or a reload of (stage, micro-batch)'s stash on the device's host track.
  void host_transfer(int device, bool to_host, int stage, int microbatch, int64_t start_ns, int64_t duration_ns);
  void host_memory(int device, int64_t time_ns, int64_t host_bytes);

 private:
  Timeline& t_;
  int devices_;
  std::vector<int> link_track_;  // K x K, -1 until used (only while K is small)
};

struct PositionReport {
  int index = 0;                                 // pipeline position (device)
  std::vector<std::pair<int, int>> layers;       // one [first, end) per model chunk
  std::vector<int> hardware_devices;             // replicas
  int64_t busy_ns = 0;
  double bubble_fraction = 0;
  int64_t static_bytes = 0;                      // weights + gradients + optimizer state
  int64_t weight_bytes = 0, gradient_bytes = 0, optimizer_bytes = 0;  // its parts
  int64_t peak_activation_bytes = 0;
  // Asynchronous schedules: the most weight versions held at once (1 + kept copies) and
  // the kept copies' bytes then (pipedream: K - s versions on position s; 2bw: 2).
  int weight_versions = 1;
  int64_t weight_version_bytes = 0;
  // What the peak holds beyond static + peak activations + weight versions: the transients' share.
  int64_t transient_bytes = 0;
  int64_t peak_memory_bytes = 0;  // static + weight versions + peak activations + transient_bytes
  bool fits = true;
  // Activation offload (core/offload.h; all 0 without): stash bytes sent to the host over
  // the step, the most held there at once, and how long reloads that ended late held up
  // the ops that needed them (added up over those ops).
  int64_t offloaded_bytes = 0;
  int64_t host_peak_bytes = 0;
  int64_t offload_delay_ns = 0;
};

// The two derived numbers every producer of a report (simulator, executor, planner)
// computes the same way; each is stated here once.
// The bubble: the share of `positions` x `span_ns` the positions sat idle, given their
// busy time added up (one position: its own bubble; K positions: the step's). 0 when
// the span is empty.
inline double bubble_fraction(double busy_ns, int positions, double span_ns) {
  return span_ns > 0 ? 1.0 - busy_ns / (static_cast<double>(positions) * span_ns) : 0.0;
}
// The transients' share of a stage's peak: what the peak holds beyond static + peak
// activations + kept weight versions, never below 0.
inline int64_t transient_share(const PositionReport& st) {
  return std::max<int64_t>(0, st.peak_memory_bytes - st.static_bytes - st.peak_activation_bytes - st.weight_version_bytes);
}

struct StepReport {
  std::string kind = "prediction";  // or "measurement"
  std::string model;
  std::string schedule;
  int num_positions = 1;  // K (JSON: "devices")
  int chunks = 1;
  int microbatches = 1;
  double microbatch_size = 1;
  int64_t batch_size = 1;
  Recompute recompute = Recompute::None;  // None or Full (core/recompute.h); JSON: "recompute": true for Full
  int64_t memory_limit_bytes = 0;  // 0 = unbounded
  // Activation offload: the hardware's host memory per device and per node (0 = unbounded).
  int64_t host_memory_limit_bytes = 0, host_node_memory_limit_bytes = 0;
  int64_t step_ns = 0;  // one step; over several steps their mean (total_ns / steps)
  double throughput_samples_per_s = 0;
  WeightUpdate weight_update = WeightUpdate::Flush;  // the schedule's; JSON: "flush", "stash", "double-buffer"
  std::string optimizer_step = "synchronized";  // a flushed step's end (core/plan.h): or "post-validation"
  std::string offload = "none";  // activation offload policy (core/offload.h): or "all", "selective"
  // Several steps (simulate --steps N, or an asynchronous schedule's op lists): when each
  // ended, from the first op's start; the rest follows from them (set_step_ends).
  int steps = 1;
  std::vector<int64_t> step_end_ns;
  int64_t total_ns = 0;              // the last step's end
  int64_t steady_state_step_ns = 0;  // once the pipeline has filled (steps > 1)
  double steady_state_throughput_samples_per_s = 0;
  int64_t startup_ns = 0;            // the first step's time beyond a steady-state step: the fill
  double bubble_fraction = 0;
  int64_t simulated_ops = 0;
  std::vector<PositionReport> positions;  // one per pipeline position (JSON: "stages")
  std::vector<std::string> notes;
  Timeline timeline;

  bool fits() const;
  int64_t peak_memory_bytes() const;  // largest over positions
  // The step plans are ranked by: the steady-state step over several steps (an
  // asynchronous schedule's has no fill or drain), else the step.
  int64_t ranked_step_ns() const { return steps > 1 ? steady_state_step_ns : step_ns; }
  // Where the timeline ends: the last step's end over several steps, else the step.
  int64_t timeline_end_ns() const { return total_ns > step_ns ? total_ns : step_ns; }
};

// Sets steps, total_ns, step_ns (the mean), throughput and the steady state from each
// step's end time. The steady-state step is the median of the step-to-step differences
// after the first step, leaving out the last one when there are 3 or more steps (the
// drain ends the last step early under an asynchronous schedule); start-up is the first
// step's end minus it. With one step only step_ns, total_ns and throughput are set.
void set_step_ends(StepReport& report, std::vector<int64_t> step_end_ns);

Json report_to_json(const StepReport& report);
StepReport report_from_json(const JsonReader& reader);  // timeline is not read back
StepReport load_report(const std::string& path);
// Readable table for a terminal.
std::string report_table(const StepReport& report);
// Chrome trace format (Perfetto, chrome://tracing): one process, one thread per track,
// counters for per-device activation memory.
std::string chrome_trace(const StepReport& report);

std::string format_bytes(double bytes);   // "1.50 GiB"
std::string format_ms(int64_t ns);        // "12.345"

}  // namespace pipescope
