// Invariants kept by the main loop: time never goes backwards (asserted); a device
// runs at most one op at a time and only the op at its cursor; an input is marked
// arrived only at the event time it arrives, so an op never starts before its input.
#include "sim/simulator.h"

#include <algorithm>
#include <cassert>
#include <map>

#include "core/error.h"
#include "sim/event_queue.h"

namespace pipescope {
namespace {

enum class EventType : uint8_t { OpDone, ActivationArrives, GradientArrives, AllReduceDone };

struct Event {
  EventType type;
  int32_t a;  // device (OpDone, AllReduceDone) or stage (arrivals)
  int32_t b;  // micro-batch (arrivals)
};

struct LinkState {
  int64_t free_at = 0;
  int track = -1;
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
    const std::size_t n = static_cast<std::size_t>(S_) * M_;
    f_arrival_.assign(n, -1);
    b_arrival_.assign(n, -1);
    held_.assign(n, 0);
    cursor_.assign(K_, 0);
    running_.assign(K_, 0);
    busy_.assign(K_, 0);
    current_act_.assign(K_, 0);
    peak_act_.assign(K_, 0);
    next_link_.resize(K_);
    prev_link_.resize(K_);
    queue_.reserve(2 * static_cast<std::size_t>(K_) + 16);
    if (o_.record_timeline) {
      for (int d = 0; d < K_; ++d) report_.timeline.tracks.push_back("device " + std::to_string(d));
      report_.timeline.events.reserve(s.num_ops());
    }
  }

  StepReport run() {
    for (int d = 0; d < K_; ++d) try_start(d);
    while (!queue_.empty()) {
      auto [time, ev] = queue_.pop();
      assert(time >= now_ && "simulated time went backwards");
      now_ = time;
      switch (ev.type) {
        case EventType::OpDone: finish(ev.a); break;
        case EventType::ActivationArrives:
          f_arrival_[idx(ev.a, ev.b)] = now_;
          try_start(s_.stage_device[ev.a]);
          break;
        case EventType::GradientArrives:
          b_arrival_[idx(ev.a, ev.b)] = now_;
          try_start(s_.stage_device[ev.a]);
          break;
        case EventType::AllReduceDone: break;
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

  int64_t duration(const Op& op) const {
    const StageCost& c = c_.stages[op.stage];
    switch (op.kind) {
      case OpKind::Forward: return c.forward_ns;
      case OpKind::Backward: return c.backward_ns;
      case OpKind::BackwardInput: return c.backward_input_ns;
      case OpKind::BackwardWeight: return c.backward_weight_ns;
      case OpKind::Recompute: return c.recompute_ns;
    }
    return 0;
  }

  void add_activation(int d, std::size_t i, int64_t bytes) {
    held_[i] += bytes;
    current_act_[d] += bytes;
    peak_act_[d] = std::max(peak_act_[d], current_act_[d]);
    sample_memory(d);
  }

  void release_activation(int d, std::size_t i) {
    current_act_[d] -= held_[i];
    held_[i] = 0;
    sample_memory(d);
  }

  void sample_memory(int d) {
    if (o_.record_timeline) report_.timeline.memory.push_back({d, now_, current_act_[d]});
  }

  void try_start(int d) {
    const auto& ops = s_.device_ops[d];
    if (running_[d] || cursor_[d] == ops.size()) return;
    const Op& op = ops[cursor_[d]];
    const std::size_t i = idx(op.stage, op.microbatch);
    if (op.kind == OpKind::Forward && op.stage > 0 && f_arrival_[i] < 0) return;
    if ((op.kind == OpKind::Backward || op.kind == OpKind::BackwardInput) && op.stage + 1 < S_ &&
        b_arrival_[i] < 0) {
      return;
    }
    const int64_t dur = duration(op);
    running_[d] = 1;
    busy_[d] += dur;
    if (op.kind == OpKind::Forward) add_activation(d, i, c_.stash_bytes(op.stage, s_.spec.recompute));
    if (op.kind == OpKind::Recompute) add_activation(d, i, c_.stages[op.stage].activation_bytes);
    if (o_.record_timeline) {
      report_.timeline.events.push_back({d, to_string(op.kind), op.stage, op.microbatch, now_, dur});
    }
    queue_.push(now_ + dur, Event{EventType::OpDone, d, 0});
  }

  void finish(int d) {
    const Op& op = s_.device_ops[d][cursor_[d]];
    const std::size_t i = idx(op.stage, op.microbatch);
    const bool frees = s_.split_backward() ? op.kind == OpKind::BackwardWeight : op.kind == OpKind::Backward;
    if (frees) release_activation(d, i);
    if (op.kind == OpKind::Forward && op.stage + 1 < S_) {
      send(op.stage, op.stage + 1, op.microbatch, c_.stages[op.stage].send_bytes, true);
    }
    if ((op.kind == OpKind::Backward || op.kind == OpKind::BackwardInput) && op.stage > 0) {
      send(op.stage, op.stage - 1, op.microbatch, c_.stages[op.stage - 1].send_bytes, false);
    }
    running_[d] = 0;
    ++cursor_[d];
    if (cursor_[d] == s_.device_ops[d].size()) start_allreduce(d);
    try_start(d);
  }

  LinkState& link_state(int from, int to) {
    if (to == (from + 1) % K_) return next_link_[from];
    if (to == (from + K_ - 1) % K_) return prev_link_[from];
    return other_links_[{from, to}];
  }

  void send(int from_stage, int to_stage, int mb, int64_t bytes, bool forward) {
    const int from = s_.stage_device[from_stage], to = s_.stage_device[to_stage];
    const EventType arrives = forward ? EventType::ActivationArrives : EventType::GradientArrives;
    if (from == to) {  // same device: the tensor is already there; finish() retries the device
      (forward ? f_arrival_ : b_arrival_)[idx(to_stage, mb)] = now_;
      return;
    }
    const Link& link = h_.link_between(c_.position_device[from], c_.position_device[to]);
    LinkState& state = link_state(from, to);
    const int64_t start = std::max(now_, state.free_at);
    const int64_t busy = link.busy_ns(bytes);
    state.free_at = start + busy;
    const int64_t arrival = start + busy + link.latency_ns();
    ++transfers_;
    if (o_.record_timeline) {
      if (state.track < 0) {
        state.track = report_.timeline.track_for("link " + std::to_string(from) + "->" + std::to_string(to));
      }
      report_.timeline.events.push_back({state.track, "transfer", to_stage, mb, start, arrival - start});
    }
    queue_.push(arrival, Event{arrives, to_stage, mb});
  }

  // Ring all-reduce of a replicated position's gradients once its last op is done:
  // 2 (r-1)/r x gradient bytes / bandwidth + 2 (r-1) latencies.
  void start_allreduce(int d) {
    const std::vector<int>& devices = c_.position_devices[d];
    const int r = static_cast<int>(devices.size());
    if (r < 2) return;
    int64_t grad_bytes = 0;
    for (int st = d; st < S_; st += K_) grad_bytes += c_.stages[st].parameter_bytes;
    // The ring runs at its slowest hop (an inter-node hop when the replicas span nodes).
    const Link link = h_.ring_link(devices);
    const int64_t bytes = 2 * (r - 1) * grad_bytes / r;
    const int64_t dur = link.busy_ns(bytes) + 2 * (r - 1) * link.latency_ns();
    if (o_.record_timeline) {
      int track = report_.timeline.track_for("allreduce " + std::to_string(d));
      report_.timeline.events.push_back({track, "allreduce", -1, -1, now_, dur});
    }
    queue_.push(now_ + dur, Event{EventType::AllReduceDone, d, 0});
  }

  StepReport make_report() {
    StepReport& r = report_;
    r.model = o_.model;
    r.schedule = to_string(s_.spec.kind);
    r.devices = K_;
    r.chunks = s_.spec.chunks;
    r.microbatches = M_;
    r.microbatch_size = c_.microbatch_size;
    r.batch_size = c_.batch_size;
    r.recompute = s_.spec.recompute;
    r.memory_limit_bytes = h_.memory_bytes;
    r.step_ns = end_;
    r.simulated_ops = static_cast<int64_t>(s_.num_ops());
    r.throughput_samples_per_s = end_ > 0 ? static_cast<double>(c_.batch_size) * 1e9 / end_ : 0.0;
    int64_t total_busy = 0;
    for (int d = 0; d < K_; ++d) {
      StageReport st;
      st.index = d;
      int64_t params = 0;
      for (int s = d; s < S_; s += K_) {
        st.layers.emplace_back(c_.stages[s].first_layer, c_.stages[s].end_layer);
        params += c_.stages[s].parameter_bytes;
      }
      st.hardware_devices = c_.position_devices[d];
      st.busy_ns = busy_[d];
      total_busy += busy_[d];
      st.bubble_fraction = end_ > 0 ? 1.0 - static_cast<double>(busy_[d]) / end_ : 0.0;
      st.static_bytes = static_cast<int64_t>(static_cast<double>(params) * (2.0 + c_.optimizer_state_factor));
      st.peak_activation_bytes = peak_act_[d];
      st.peak_memory_bytes = st.static_bytes + st.peak_activation_bytes;
      st.fits = h_.memory_bytes == 0 || st.peak_memory_bytes <= h_.memory_bytes;
      r.stages.push_back(std::move(st));
    }
    r.bubble_fraction = end_ > 0 ? 1.0 - static_cast<double>(total_busy) / (static_cast<double>(K_) * end_) : 0.0;
    if (c_.split_estimated) {
      r.notes.push_back("the profile has no split backward: B (input gradient) and W (weight gradient) "
                        "each take half of backward_ms");
    }
    if (!c_.extrapolation_note.empty()) r.notes.push_back(c_.extrapolation_note);
    if (h_.memory_bytes == 0) r.notes.push_back("no hardware file: communication is free and memory is unbounded");
    r.notes.push_back("peak memory = weights + gradients + optimizer state + stashed activations "
                      "(core/cost_model.h); a layer's temporaries and tensors in flight are not counted");
    return std::move(r);
  }

  const Schedule& s_;
  const CostModel& c_;
  const Hardware& h_;
  const SimOptions& o_;
  const int K_, S_, M_;
  EventQueue<Event> queue_;
  int64_t now_ = 0, end_ = 0, transfers_ = 0;
  std::vector<int64_t> f_arrival_, b_arrival_, held_;
  std::vector<std::size_t> cursor_;
  std::vector<uint8_t> running_;
  std::vector<int64_t> busy_, current_act_, peak_act_;
  std::vector<LinkState> next_link_, prev_link_;
  std::map<std::pair<int, int>, LinkState> other_links_;
  StepReport report_;
};

}  // namespace

StepReport simulate(const Schedule& schedule, const CostModel& costs, const Hardware& hardware,
                    const SimOptions& options) {
  return PipelineSim(schedule, costs, hardware, options).run();
}

}  // namespace pipescope
