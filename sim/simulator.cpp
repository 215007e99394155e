// Invariants kept by the main loop: time never goes backwards (PS_INVARIANT, checked in
// every build); a device runs at most one op at a time and only the op at its cursor;
// an input is marked arrived only at the event time it arrives, so an op never starts
// before its input. What each op waits for, costs, charges and sends: core/op_rules.h.
#include "sim/simulator.h"

#include <algorithm>
#include <array>
#include <map>
#include <optional>

#include "core/error.h"
#include "core/invariant.h"
#include "core/op_rules.h"
#include "sim/event_queue.h"

namespace pipescope {
namespace {

enum class EventType : uint8_t { OpDone, Arrives, AllReduceDone, OptimizerDone };

struct Event {
  EventType type;
  MessageKind kind;  // what arrives (Arrives)
  int32_t a;         // device (OpDone, AllReduceDone) or receiving stage (Arrives)
  int32_t b;         // micro-batch (Arrives)
};

struct LinkState {
  int64_t free_at = 0;
};

class PipelineSim {
 public:
  PipelineSim(const Schedule& s, const CostModel& c, const Hardware& h, const SimOptions& o)
      : s_(s), c_(c), h_(h), o_(o), K_(s.devices()), S_(s.stages()), M_(s.microbatches()) {
    if (static_cast<int>(c.stages.size()) != S_) {
      throw InputError("the plan has " + std::to_string(c.stages.size()) +
                       " stages but the schedule has " + std::to_string(S_));
    }
    if (static_cast<int>(c.position_device.size()) != K_) {
      throw InputError("the cost model has " + std::to_string(c.position_device.size()) +
                       " pipeline positions but the schedule has " + std::to_string(K_));
    }
    for (int st = 0; st < S_ && !c.stage_position.empty(); ++st) {
      if (c.stage_position[st] != s.stage_device[st]) {
        throw InputError("stage " + std::to_string(st) + " is on position " + std::to_string(c.stage_position[st]) +
                         " in the plan but on device " + std::to_string(s.stage_device[st]) + " in the schedule");
      }
    }
    const std::size_t n = static_cast<std::size_t>(S_) * M_;
    arrival_[0].assign(n, -1);
    arrival_[1].assign(n, -1);
    held_.assign(n, 0);
    held_total_.assign(n, 0);
    current_total_.assign(K_, 0);
    peak_total_.assign(K_, 0);
    cursor_.assign(K_, 0);
    running_.assign(K_, 0);
    busy_.assign(K_, 0);
    current_act_.assign(K_, 0);
    peak_act_.assign(K_, 0);
    next_link_.resize(K_);
    prev_link_.resize(K_);
    queue_.reserve(2 * static_cast<std::size_t>(K_) + 16);
    if (o_.record_timeline) {
      recorder_.emplace(report_.timeline, K_);
      report_.timeline.events.reserve(s.num_ops());
    }
  }

  StepReport run() {
    for (int d = 0; d < K_; ++d) try_start(d);
    while (!queue_.empty()) {
      auto [time, ev] = queue_.pop();
      PS_INVARIANT(time >= now_, "simulated time went backwards");
      now_ = time;
      switch (ev.type) {
        case EventType::OpDone: finish(ev.a); break;
        case EventType::Arrives:
          arrival(ev.kind, ev.a, ev.b) = now_;
          try_start(s_.stage_device[ev.a]);
          break;
        case EventType::AllReduceDone:
          if (recorder_) recorder_->memory(ev.a, now_, current_act_[ev.a], current_total_[ev.a] - current_act_[ev.a]);
          start_optimizer(ev.a);
          break;
        case EventType::OptimizerDone: break;
      }
      end_ = std::max(end_, now_);
    }
    for (int d = 0; d < K_; ++d) {
      if (cursor_[d] != s_.device_ops[d].size()) {
        throw InputError("schedule cannot make progress: device " + std::to_string(d) +
                         " is stuck at op " + std::to_string(cursor_[d]));
      }
    }
    return make_report();
  }

 private:
  std::size_t idx(int stage, int mb) const { return static_cast<std::size_t>(stage) * M_ + mb; }
  int64_t& arrival(MessageKind kind, int stage, int mb) { return arrival_[static_cast<int>(kind)][idx(stage, mb)]; }

  void charge(int d, std::size_t i, int64_t bytes) {
    if (bytes == 0) return;
    held_[i] += bytes;
    current_act_[d] += bytes;
    peak_act_[d] = std::max(peak_act_[d], current_act_[d]);
    if (recorder_) recorder_->memory(d, now_, current_act_[d]);
  }

  void release(int d, std::size_t i) {
    current_act_[d] -= held_[i];
    held_[i] = 0;
    PS_INVARIANT(current_act_[d] >= 0, "a device freed more than it held");
    if (recorder_) recorder_->memory(d, now_, current_act_[d]);
  }

  // What the op leaves held for its (stage, micro-batch), or frees: the total's side of charge/release.
  void hold(int d, const Op& op) {
    const std::size_t i = idx(op.stage, op.microbatch);
    const int64_t change = op_frees(op.kind) ? -held_total_[i] : c_.stages[op.stage].memory[s_.recompute].of(op.kind).held;
    held_total_[i] += change;
    current_total_[d] += change;
    if (recorder_) recorder_->memory(d, now_, current_act_[d], current_total_[d] - current_act_[d]);
    PS_INVARIANT(current_total_[d] >= 0 && held_total_[i] >= 0, "a device freed more than it held");
  }

  void try_start(int d) {
    const auto& ops = s_.device_ops[d];
    if (running_[d] || cursor_[d] == ops.size()) return;
    const Op& op = ops[cursor_[d]];
    if (auto in = op_receives(op, S_); in && arrival(in->kind, op.stage, op.microbatch) < 0) return;
    const StageCost& cost = c_.stages[op.stage];
    const int64_t dur = op_duration_ns(op.kind, cost);
    running_[d] = 1;
    busy_[d] += dur;
    charge(d, idx(op.stage, op.microbatch), op_charge_bytes(op.kind, cost, s_.recompute));
    // Stash and transients together: the op's peak over what the device holds (op_rules.h).
    const int64_t op_peak = cost.memory[s_.recompute].of(op.kind).peak;
    peak_total_[d] = std::max(peak_total_[d], current_total_[d] + op_peak);
    if (recorder_) recorder_->memory(d, now_, current_act_[d], current_total_[d] + op_peak - current_act_[d]);
    if (recorder_) recorder_->op(d, 0, op, now_, dur);
    queue_.push(now_ + dur, Event{EventType::OpDone, MessageKind::Activation, d, 0});
  }

  void finish(int d) {
    const Op& op = s_.device_ops[d][cursor_[d]];
    if (op_frees(op.kind)) release(d, idx(op.stage, op.microbatch));
    hold(d, op);
    if (auto out = op_sends(op, S_)) send(*out, op.microbatch);
    running_[d] = 0;
    ++cursor_[d];
    if (cursor_[d] == s_.device_ops[d].size() && !start_allreduce(d)) start_optimizer(d);
    try_start(d);
  }

  LinkState& link_state(int from, int to) {
    if (to == (from + 1) % K_) return next_link_[from];
    if (to == (from + K_ - 1) % K_) return prev_link_[from];
    return other_links_[{from, to}];
  }

  void send(const Message& msg, int mb) {
    const int from = s_.stage_device[msg.from_stage], to = s_.stage_device[msg.to_stage];
    if (from == to) {  // same device: the tensor is already there; finish() retries the device
      arrival(msg.kind, msg.to_stage, mb) = now_;
      return;
    }
    const int64_t bytes = c_.stages[msg.cut() - 1].send_bytes;
    const Link& link = h_.link_between(c_.position_device[from], c_.position_device[to]);
    LinkState& state = link_state(from, to);
    const int64_t start = std::max(now_, state.free_at);
    const int64_t busy = link.busy_ns(bytes);
    state.free_at = start + busy;
    const int64_t at = start + busy + link.latency_ns();
    if (recorder_) recorder_->transfer(from, to, msg.to_stage, mb, start, at - start);
    queue_.push(at, Event{EventType::Arrives, msg.kind, msg.to_stage, mb});
  }

  // The optimizer step ends the device's step: after its last op, or after the all-reduce.
  void start_optimizer(int d) {
    int64_t dur = 0;
    for (int st : stages_of_[d]) dur += c_.stages[st].optimizer_ns;
    if (dur == 0) return;
    if (recorder_) recorder_->optimizer(d, 0, now_, dur);
    queue_.push(now_ + dur, Event{EventType::OptimizerDone, MessageKind::Activation, d, 0});
  }

  // A replicated position's gradients are all-reduced once its last op is done; false when not replicated.
  bool start_allreduce(int d) {
    const std::vector<int>& devices = c_.position_devices[d];
    const int r = static_cast<int>(devices.size());
    if (r < 2) return false;
    int64_t grad_bytes = 0;
    for (int st : stages_of_[d]) grad_bytes += c_.stages[st].parameter_bytes;
    if (c_.transients_counted) {
      const int64_t buffer = allreduce_buffer_bytes(grad_bytes, r);
      peak_total_[d] = std::max(peak_total_[d], current_total_[d] + buffer);
      if (recorder_) recorder_->memory(d, now_, current_act_[d], current_total_[d] + buffer - current_act_[d]);
    }
    // The ring runs at its slowest hop (an inter-node hop when the replicas span nodes).
    const int64_t dur = allreduce_ns(h_.ring_link(devices), grad_bytes, r);
    if (recorder_) recorder_->allreduce(d, 0, now_, dur);
    queue_.push(now_ + dur, Event{EventType::AllReduceDone, MessageKind::Activation, d, 0});
    return true;
  }

  StepReport make_report() {
    StepReport& r = report_;
    r.model = o_.model;
    r.schedule = s_.name;
    r.devices = K_;
    r.chunks = std::max(1, S_ / K_);
    r.microbatches = M_;
    r.microbatch_size = c_.microbatch_size;
    r.batch_size = c_.batch_size;
    r.recompute = s_.recompute;
    r.memory_limit_bytes = h_.memory_bytes;
    r.step_ns = end_;
    r.simulated_ops = static_cast<int64_t>(s_.num_ops());
    r.throughput_samples_per_s = end_ > 0 ? static_cast<double>(c_.batch_size) * 1e9 / end_ : 0.0;
    int64_t total_busy = 0;
    for (int d = 0; d < K_; ++d) {
      StageReport st;
      st.index = d;
      int64_t params = 0;
      for (int s : stages_of_[d]) {
        st.layers.emplace_back(c_.stages[s].first_layer, c_.stages[s].end_layer);
        params += c_.stages[s].parameter_bytes;
      }
      st.hardware_devices = c_.position_devices[d];
      st.busy_ns = busy_[d];
      total_busy += busy_[d];
      st.bubble_fraction = end_ > 0 ? 1.0 - static_cast<double>(busy_[d]) / end_ : 0.0;
      st.static_bytes = static_bytes(params, c_.optimizer_state_factor);
      st.weight_bytes = params;
      st.gradient_bytes = params;
      st.optimizer_bytes = st.static_bytes - 2 * params;
      st.peak_activation_bytes = peak_act_[d];
      st.peak_memory_bytes = st.static_bytes + peak_total_[d];
      st.transient_bytes = st.peak_memory_bytes - st.static_bytes - st.peak_activation_bytes;
      st.fits = h_.memory_bytes == 0 || st.peak_memory_bytes <= h_.memory_bytes;
      r.stages.push_back(std::move(st));
    }
    r.bubble_fraction = end_ > 0 ? 1.0 - static_cast<double>(total_busy) / (static_cast<double>(K_) * end_) : 0.0;
    if (!c_.split_measured && s_.has_split_backward()) {
      r.notes.push_back("the profile has no split backward: I (input gradient) and W (weight gradient) "
                        "each take half of backward_ms");
    }
    if (!c_.extrapolation_note.empty()) r.notes.push_back(c_.extrapolation_note);
    if (h_.memory_bytes == 0) r.notes.push_back("no hardware file: communication is free and memory is unbounded");
    if (c_.transients_counted) {
      r.notes.push_back("peak memory = weights + gradients + optimizer state + stashed activations + transients "
                        "(tensors received and sent, the loss gradient, output gradients held from I to W, each "
                        "layer's workspace from the profile's workspace_bytes, all-reduce buffers; core/op_rules.h)");
    } else {
      r.notes.push_back("peak memory = weights + gradients + optimizer state + stashed activations "
                        "(core/op_rules.h); transients are not counted: the profile has no workspace_bytes (a "
                        "layer's workspace, tensors received and sent, the loss gradient, output gradients held "
                        "from I to W, all-reduce buffers)");
    }
    return std::move(r);
  }

  const Schedule& s_;
  const CostModel& c_;
  const Hardware& h_;
  const SimOptions& o_;
  const int K_, S_, M_;
  const std::vector<std::vector<int>> stages_of_ = [this] {
    std::vector<std::vector<int>> out(static_cast<std::size_t>(s_.devices()));
    for (int st = 0; st < s_.stages(); ++st) out[s_.stage_device[st]].push_back(st);
    return out;
  }();
  EventQueue<Event> queue_;
  int64_t now_ = 0, end_ = 0;
  std::array<std::vector<int64_t>, 2> arrival_;  // per message kind, per (stage, micro-batch)
  std::vector<int64_t> held_, held_total_;  // per (stage, micro-batch): activations; everything
  std::vector<int64_t> current_total_, peak_total_;  // per device, above the static bytes
  std::vector<std::size_t> cursor_;
  std::vector<uint8_t> running_;
  std::vector<int64_t> busy_, current_act_, peak_act_;
  std::vector<LinkState> next_link_, prev_link_;
  std::map<std::pair<int, int>, LinkState> other_links_;
  StepReport report_;
  std::optional<TimelineRecorder> recorder_;
};

}  // namespace

StepReport simulate(const Schedule& schedule, const CostModel& costs, const Hardware& hardware,
                    const SimOptions& options) {
  return PipelineSim(schedule, costs, hardware, options).run();
}

}  // namespace pipescope
