// Invariants kept by the main loop: time never goes backwards on a device or a link
// (PS_INVARIANT, checked in every build); a device runs at most one op at a time and
// only the op at its cursor; an op starts at max(its device is free, its input has
// arrived). What each op waits for, costs, charges and sends: core/op_rules.h.
//
// How it runs, in O(1) per op whatever K: no global event queue. Each op's start is
// max(device free, input arrival), and every directed link carries only the sends of
// its source device, which happen in that device's op order at non-decreasing times;
// so walking each device's ops in order, and parking a device whose next input has not
// been computed yet until the op that sends it runs, gives the same times, peaks and
// link queues as replaying events in global time order (tests/sim/sim_longest_path_test.cpp
// holds it to the longest path through the op graph). The timeline comes out device by
// device: each track's events, and each device's memory samples, are in time order;
// the tracks are interleaved as the walk went (readers that want one order sort).
#include "sim/simulator.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <optional>
#include <tuple>

#include "core/error.h"
#include "core/invariant.h"
#include "core/op_rules.h"
#include "sim/offload.h"
#include "sim/sim_report.h"
#include "sim/sim_steps.h"

namespace pipescope {
namespace {

struct LinkState {
  int64_t free_at = 0;
};

// What op_rules.h says of an op of one kind on one stage (the rules depend on nothing
// else), looked up once per (kind, stage) instead of once per op.
struct OpRule {
  int64_t duration_ns = 0;
  int64_t release_bytes = 0;  // op_release_bytes: what I frees of the stash
  int64_t receive_block_ns = 0;  // blocking p2p: a receive from another device holds the device this long
  int64_t charge_bytes = 0;   // op_charge_bytes: what the op adds to its micro-batch's stash
  int64_t peak_bytes = 0;     // StageMemory: the op's peak over what the device holds
  int64_t held_bytes = 0;     // StageMemory: what it leaves held (unless it frees)
  bool frees = false;         // op_frees: its end frees the (stage, micro-batch)'s stash
  std::optional<Message> receives, sends;
  int64_t pre_ns = 0;   // the runtime before the op: its action term, and issuing a receive from another device
  int64_t post_ns = 0;  // the runtime after it: the loss (last stage's F), and issuing a send to another device
  int64_t runtime_op_ns = 0;  // what the runtime changes of the op's own time (op_us, the split rule)
};

// The link times of the tensor crossing one cut, either way (computed once per run).
struct CutLink {
  int64_t busy_ns = 0;
  int64_t latency_ns = 0;
};

class PipelineSim {
 public:
  // `offload_bytes`: per (stage, micro-batch) slot, the bytes its F offloads (empty: none).
  PipelineSim(const Schedule& s, const CostModel& c, const Hardware& h, const SimOptions& o,
              std::vector<int64_t> offload_bytes = {})
      : s_(s), c_(c), h_(h), o_(o), K_(s.positions()), S_(s.stages()), M_(s.microbatches()) {
    if (static_cast<int>(c.stages.size()) != S_) {
      throw InputError("the plan has " + std::to_string(c.stages.size()) +
                       " stages but the schedule has " + std::to_string(S_));
    }
    if (static_cast<int>(c.position_device.size()) != K_) {
      throw InputError("the cost model has " + std::to_string(c.position_device.size()) +
                       " pipeline positions but the schedule has " + std::to_string(K_));
    }
    for (int st = 0; st < S_ && !c.stage_position.empty(); ++st) {
      if (c.stage_position[st] != s.stage_position[st]) {
        throw InputError("stage " + std::to_string(st) + " is on position " + std::to_string(c.stage_position[st]) +
                         " in the plan but on device " + std::to_string(s.stage_position[st]) + " in the schedule");
      }
    }
    if (s.asynchronous()) {
      for (const auto& replicas : c.position_devices) {
        if (replicas.size() > 1) {
          throw InputError(s.name + ": replicated stages are not supported under asynchronous schedules yet "
                           "(PipeDream's round-robin replication); use --replicas 1");
        }
      }
      versions_.resize(S_);
      for (int st = 0; st < S_; ++st) versions_[st].emplace(s);
    }
    step_end_.assign(static_cast<std::size_t>(s.steps), 0);
    version_bytes_.assign(K_, 0);
    peak_versions_.assign(K_, 1);
    const std::size_t n = static_cast<std::size_t>(S_) * M_;
    arrival_.assign(2 * n, -1);
    held_.assign(n, 0);
    held_total_.assign(n, 0);
    current_total_.assign(K_, 0);
    peak_total_.assign(K_, 0);
    cursor_.assign(K_, 0);
    free_at_.assign(K_, 0);
    waiting_.assign(K_, 0);
    busy_.assign(K_, 0);
    current_act_.assign(K_, 0);
    peak_act_.assign(K_, 0);
    next_link_.resize(K_);
    prev_link_.resize(K_);
    cut_link_.resize(std::max(S_, 1));
    for (int cut = 1; cut < S_; ++cut) {
      const int from = s.stage_position[cut - 1], to = s.stage_position[cut];
      const Link& link = h_.link_between(c_.position_device[from], c_.position_device[to]);
      cut_link_[cut] = {link.busy_ns(c_.stages[cut - 1].send_bytes), link.latency_ns()};
    }
    rules_.resize(static_cast<std::size_t>(kOpKinds) * S_);
    for (int k = 0; k < kOpKinds; ++k) {
      for (int st = 0; st < S_; ++st) {
        const Op op{static_cast<OpKind>(k), st, 0};
        OpRule& rule = rules_[rule_index(op)];
        const StageCost& cost = c_.stages[st];
        const OpMemory& memory = cost.memory[s.r_ops].of(op.kind);
        rule = {op_duration_ns(op.kind, cost), op_release_bytes(op.kind, cost), 0,
                op_charge_bytes(op.kind, cost, s.r_ops), memory.peak, memory.held, op_frees(op.kind),
                op_receives(op, S_), op_sends(op, S_)};
        const bool remote_in = rule.receives && s.stage_position[rule.receives->from_stage] != s.stage_position[st];
        if (blocking_ && remote_in) {
          const CutLink& l = cut_link_[rule.receives->cut()];
          rule.receive_block_ns = l.busy_ns + l.latency_ns;
        }
        if (rt_) {
          charge_runtime(rule, op, remote_in);
          rule.runtime_op_ns = rule.duration_ns - op_duration_ns(op.kind, cost);
        }
      }
    }
    first_op_.assign(K_ + 1, 0);
    for (int d = 0; d < K_; ++d) first_op_[d + 1] = first_op_[d] + s.position_ops[d].size();
    check_per_op_option(o_.op_durations_ns.size(), "op_durations_ns");
    check_per_op_option(o_.send_factors.size(), "send_factors");
    saved_ = overlap_savings(s, c);
    if (o_.op_starts_ns) o_.op_starts_ns->assign(first_op_[K_], -1);
    if (o_.op_ends_ns) o_.op_ends_ns->assign(first_op_[K_], -1);
    if (o_.record_timeline) {
      recorder_.emplace(report_.timeline, K_);
      report_.timeline.events.reserve(2 * s.num_ops());  // ops, and about one transfer per op
      report_.timeline.memory.reserve(2 * s.num_ops());  // one sample at each op's start and end
    }
    if (!offload_bytes.empty()) {
      const DeviceBytes bytes{held_, held_total_, current_act_, peak_act_, current_total_, version_bytes_};
      offload_.emplace(s, *h.host_link, std::move(offload_bytes), first_op_, bytes, recorder_ ? &*recorder_ : nullptr);
    }
  }

  StepReport run() {
    if (rt_ && rt_->prologue_ns > 0) {  // the step's start on every device, before its first op
      for (int d = 0; d < K_; ++d) {
        if (s_.position_ops[d].empty()) continue;
        free_at_[d] = rt_->prologue_ns;
        if (recorder_) recorder_->runtime(d, -1, -1, 0, rt_->prologue_ns);
      }
    }
    runnable_.reserve(K_);
    for (int d = K_ - 1; d >= 0; --d) runnable_.push_back(d);
    while (!runnable_.empty()) {
      const int d = runnable_.back();
      runnable_.pop_back();
      if (offload_) {
        run_device<true>(d);
      } else {
        run_device<false>(d);
      }
    }
    for (int d = 0; d < K_; ++d) {
      if (cursor_[d] != s_.position_ops[d].size()) {
        throw InputError("schedule cannot make progress: device " + std::to_string(d) +
                         " is stuck at op " + std::to_string(cursor_[d]));
      }
    }
    return make_report();
  }

 private:
  // The runtime's terms of one (kind, stage) (core/runtime_costs.h): its action, the
  // issue of its messages to and from other devices, the loss after the last stage's F,
  // and the split backward as the runtime runs it on the first stage.
  void charge_runtime(OpRule& rule, const Op& op, bool remote_in) const {
    const RuntimeCosts& rt = *rt_;
    rule.pre_ns = rt.action_ns[static_cast<std::size_t>(op.kind)];
    rule.duration_ns = std::max<int64_t>(0, rule.duration_ns + rt.op_ns[static_cast<std::size_t>(op.kind)]);
    if (remote_in) rule.pre_ns += rt.recv_issue(c_.stages[rule.receives->from_stage].send_bytes);
    if (rule.sends && s_.stage_position[rule.sends->to_stage] != s_.stage_position[op.stage]) {
      rule.post_ns += rt.send_issue(c_.stages[rule.sends->from_stage].send_bytes);
    }
    if (op.kind == OpKind::Forward && op.stage == S_ - 1) rule.post_ns += rt.loss_ns;
    const bool empty_input_pass = rt.first_stage_split == FirstStageSplit::WeightPassRunsAll && op.stage == 0;
    if (op.kind == OpKind::BackwardInput) {
      // What I does not free stays held until W frees the whole stash. Without the
      // profile's transients I's peak is its start (it adds nothing while it runs), kept or
      // not; with them the peak was counted as I releases layer by layer (core/op_rules.h),
      // so keeping it raises the peak by at most that much, which is what is charged (an
      // upper bound; planner/stage_model.h counts the same).
      const int64_t kept = rule.release_bytes - input_pass_freed_bytes(c_.stages[op.stage], op.stage, &rt);
      rule.held_bytes += kept;
      if (c_.transients_counted) rule.peak_bytes += kept;
      rule.release_bytes -= kept;
    }
    if (rt.local_hop_shares_tensor && op.kind == OpKind::Forward && op.stage > 0 &&
        s_.stage_position[op.stage - 1] == s_.stage_position[op.stage]) {
      // The tensor from the earlier stage on this device is the one it already holds for
      // this micro-batch until after this stage's backward: charged once, there.
      const int64_t shared = std::min(c_.stages[op.stage].shared_with_previous_bytes, rule.charge_bytes);
      rule.charge_bytes -= shared;
      rule.held_bytes -= std::min(shared, std::max<int64_t>(0, rule.held_bytes));  // 0: a model without StageMemory
      rule.peak_bytes -= std::min(shared, std::max<int64_t>(0, rule.peak_bytes));
      rule.release_bytes = std::min(rule.release_bytes, rule.charge_bytes);  // I cannot free what it does not hold
    }
    if (empty_input_pass) {
      if (op.kind == OpKind::BackwardInput) {
        rule.duration_ns = std::max<int64_t>(0, rt.op_ns[static_cast<std::size_t>(OpKind::BackwardInput)]);  // the call, not the pass
      }
      if (op.kind == OpKind::BackwardWeight) {
        rule.duration_ns =
            std::max<int64_t>(0, c_.stages[0].backward_ns + rt.op_ns[static_cast<std::size_t>(OpKind::BackwardWeight)]);
      }
    }
  }

  // The optimizer step of one stage: the runtime's per-byte term when it has one (it
  // replaces the profile's optimizer_ms), else the profile's.
  int64_t stage_optimizer_ns(int st) const {
    if (rt_ && rt_->optimizer_ns_per_parameter_byte > 0) {
      return std::llround(rt_->optimizer_ns_per_parameter_byte * static_cast<double>(c_.stages[st].parameter_bytes));
    }
    return c_.stages[st].optimizer_ns;
  }

  // A flushed step's optimizer step on device d: its stages' (stage_optimizer_ns) and the
  // runtime's own per-device term, never below 0.
  int64_t device_optimizer_ns(int d) const {
    int64_t dur = 0;
    for (int st : stages_of_[d]) dur += stage_optimizer_ns(st);
    return rt_ ? std::max<int64_t>(0, dur + rt_->optimizer_ns) : dur;
  }

  // The runtime's terms after a device's last op of a step (gradient scaling, the last
  // stage's output merge), on its track; returns when they end.
  int64_t charge_epilogue(int d, int64_t at) {
    if (!rt_) return at;
    int64_t dur = rt_->epilogue_ns;
    if (s_.stage_position[S_ - 1] == d) dur += rt_->last_stage_epilogue_ns;
    if (dur <= 0) return at;
    if (recorder_) recorder_->runtime(d, -1, -1, at, dur);
    end_ = std::max(end_, at + dur);
    return at + dur;
  }

  std::size_t idx(int stage, int mb) const { return static_cast<std::size_t>(stage) * M_ + mb; }
  // Both kinds of one (stage, micro-batch) sit side by side: one cache line serves F and B.
  int64_t& arrival(MessageKind kind, int stage, int mb) { return arrival_[2 * idx(stage, mb) + static_cast<int>(kind)]; }

  static constexpr int kOpKinds = 5;  // F, B, I, W, R
  std::size_t rule_index(const Op& op) const { return static_cast<std::size_t>(op.kind) * S_ + op.stage; }

  void check_per_op_option(std::size_t size, const char* name) const {
    if (size != 0 && size != first_op_[K_]) {
      throw InputError(std::string("simulate: SimOptions.") + name + " has " + std::to_string(size) +
                       " entries but the schedule has " + std::to_string(first_op_[K_]) + " ops");
    }
  }

  void charge(int d, std::size_t i, int64_t bytes) {
    if (bytes == 0) return;
    held_[i] += bytes;
    current_act_[d] += bytes;
    peak_act_[d] = std::max(peak_act_[d], current_act_[d]);
  }

  void release(int d, std::size_t i) {
    current_act_[d] -= held_[i];
    held_[i] = 0;
    PS_INVARIANT(current_act_[d] >= 0, "a device freed more than it held");
  }

  // Part of the stash (I: what W does not need).
  void release(int d, std::size_t i, int64_t bytes) {
    held_[i] -= bytes;
    current_act_[d] -= bytes;
    PS_INVARIANT(held_[i] >= 0 && current_act_[d] >= 0, "a device freed more than it held");
  }

  // What the op leaves held for its (stage, micro-batch), or frees: the total's side of charge/release.
  void hold(int d, const Op& op, const OpRule& rule) {
    const std::size_t i = idx(op.stage, op.microbatch);
    const int64_t change = rule.frees ? -held_total_[i] : rule.held_bytes;
    held_total_[i] += change;
    current_total_[d] += change;
    if (recorder_) {
      recorder_->memory(d, now_, current_act_[d], current_total_[d] - current_act_[d] - version_bytes_[d],
                        version_bytes_[d]);
    }
    PS_INVARIANT(current_total_[d] >= 0 && held_total_[i] >= 0, "a device freed more than it held");
  }

  // Runs device d's ops in order until it finishes or its next op's input is not yet
  // known; then it is parked until a send to it wakes it.
  // kOffload: the plan offloads activations (offload_ is set); a template argument so
  // that the walk without offload pays nothing for its hooks.
  template <bool kOffload>
  void run_device(int d) {
    const std::vector<Op>& ops = s_.position_ops[d];
    const std::size_t first = first_op_[d];
    std::size_t i = cursor_[d];
    int64_t free_at = free_at_[d];
    for (; i < ops.size(); ++i) {
      const Op& op = ops[i];
      const OpRule& rule = rules_[rule_index(op)];
      int64_t at = -1;
      if (const auto& in = rule.receives) {
        at = arrival(in->kind, op.stage, op.microbatch);
        if (at < 0) {
          waiting_[d] = 1;
          break;
        }
      }
      int64_t start = free_at;
      if (rule.pre_ns > 0) {
        if (recorder_) recorder_->runtime(d, op.stage, op.microbatch, start, rule.pre_ns);
        start += rule.pre_ns;
      }
      if (rule.receives) {
        start = batched_ && s_.stage_position[rule.receives->from_stage] != d
                    ? std::max(start, rendezvous(*rule.receives, op.microbatch, at, start))
                    : std::max(start + rule.receive_block_ns, at);
      }
      if constexpr (kOffload) start = offload_->before_op(d, first + i, start);
      // A sampled duration (the jitter seam) is the profile's op: the runtime's change rides on it.
      int64_t dur = o_.op_durations_ns.empty() ? rule.duration_ns
                                               : std::max<int64_t>(0, o_.op_durations_ns[first + i] + rule.runtime_op_ns);
      if (!saved_.empty()) dur -= std::min(dur, saved_[first + i]);  // an overlapped F&B pair's B
      PS_INVARIANT(dur >= 0, "simulated time went backwards (an op of negative duration)");
      now_ = start;
      busy_[d] += dur;
      if (o_.op_starts_ns) (*o_.op_starts_ns)[first + i] = start;
      if (o_.op_ends_ns) (*o_.op_ends_ns)[first + i] = start + dur;
      const std::size_t slot = idx(op.stage, op.microbatch);
      charge(d, slot, rule.charge_bytes);
      // Stash and transients together: the op's peak over what the device holds (op_rules.h).
      const int64_t op_peak = rule.peak_bytes;
      peak_total_[d] = std::max(peak_total_[d], current_total_[d] + op_peak);
      if (recorder_) {
        recorder_->memory(d, now_, current_act_[d], current_total_[d] + op_peak - current_act_[d] - version_bytes_[d],
                          version_bytes_[d]);
        recorder_->op(d, 0, op, now_, dur);
      }
      if (!versions_.empty()) versions_[op.stage]->use(op);
      now_ = free_at = start + dur;
      if constexpr (kOffload) offload_->settle(d, now_);
      if (rule.frees) {
        release(d, slot);
      } else if (rule.release_bytes > 0) {
        release(d, slot, rule.release_bytes);
      }
      hold(d, op, rule);
      if constexpr (kOffload) {
        if (op.kind == OpKind::Forward) offload_->after_forward(d, first + i, start, now_);
      }
      if (rule.post_ns > 0) {
        if (recorder_) recorder_->runtime(d, op.stage, op.microbatch, free_at, rule.post_ns);
        now_ = free_at += rule.post_ns;
      }
      if (rule.sends) {
        const int64_t sent = send(*rule.sends, op.microbatch, first + i);
        if (blocking_) free_at = std::max(free_at, sent);  // the sender waits for its tensor to arrive
      }
      if (!versions_.empty()) free_at = update_weights(d, op, free_at);
      if (post_validation_ && (i + 1 == ops.size() || s_.step_of(ops[i + 1].microbatch) != s_.step_of(op.microbatch))) {
        free_at = step_optimizer(d, charge_epilogue(d, free_at));  // the device's own step boundary
      }
      if (s_.steps > 1) {  // one step ends with the run (make_report): no per-op division then
        int64_t& step_end = step_end_[s_.step_of(op.microbatch)];
        step_end = std::max(step_end, free_at);
      }
    }
    cursor_[d] = i;
    free_at_[d] = free_at;
    end_ = std::max(end_, free_at);
    now_ = free_at;
    if (i == ops.size() && !ops.empty() && versions_.empty() && !post_validation_) {
      now_ = charge_epilogue(d, now_);
      if (!start_allreduce(d)) start_optimizer(d, now_);
    }
  }

  // Post-validation: right after the device's last op of a step, a replicated position's
  // gradient all-reduce among its replicas (as start_allreduce), then its optimizer step,
  // on its own track; returns when the device is free for the next step's ops.
  int64_t step_optimizer(int d, int64_t at) {
    const std::vector<int>& devices = c_.position_devices[d];
    const int r = static_cast<int>(devices.size());
    if (r >= 2) {
      int64_t grad_bytes = 0;
      for (int st : stages_of_[d]) grad_bytes += c_.stages[st].parameter_bytes;
      if (c_.transients_counted) peak_total_[d] = std::max(peak_total_[d], current_total_[d] + allreduce_buffer_bytes(grad_bytes, r));
      const int64_t ring = allreduce_ns(h_.ring_link(devices), grad_bytes, r);
      if (recorder_) recorder_->allreduce(d, 0, at, ring);
      at += ring;
    }
    const int64_t dur = device_optimizer_ns(d);
    if (recorder_ && dur > 0) recorder_->optimizer(d, 0, at, dur);
    end_ = std::max(end_, at + dur);
    return at + dur;
  }

  // Asynchronous schedules: the end of an op that frees a micro-batch may update its
  // stage's weights (core/op_rules.h's WeightVersions): drop versions, keep a copy of the
  // current one, then the optimizer step on the device. Returns when the device is free.
  int64_t update_weights(int d, const Op& op, int64_t at) {
    const WeightVersions::Update u = versions_[op.stage]->finish(op);
    if (!u.happens) return at;
    const int64_t params = c_.stages[op.stage].parameter_bytes;
    const int64_t change = params * ((u.kept >= 0 ? 1 : 0) - static_cast<int64_t>(u.dropped.size()));
    version_bytes_[d] += change;
    current_total_[d] += change;
    peak_total_[d] = std::max(peak_total_[d], current_total_[d]);
    int copies = 0;
    for (int st : stages_of_[d]) copies += versions_[st]->kept_copies();
    peak_versions_[d] = std::max(peak_versions_[d], 1 + copies);
    const int64_t dur = stage_optimizer_ns(op.stage);
    if (recorder_) {
      recorder_->memory(d, at, current_act_[d], current_total_[d] - current_act_[d] - version_bytes_[d],
                        version_bytes_[d]);
      if (dur > 0) recorder_->optimizer(d, 0, at, dur);
    }
    end_ = std::max(end_, at + dur);
    return at + dur;
  }

  LinkState& link_state(int from, int to) {
    if (to == from + 1 || (to == 0 && from == K_ - 1)) return next_link_[from];
    if (to == from - 1 || (from == 0 && to == K_ - 1)) return prev_link_[from];
    return other_links_[{from, to}];
  }

  // Batched p2p: the transfer of `msg` (micro-batch mb) posted by its sender at `sent` and
  // by its receiver at `posted` starts when both have, on its link in order; returns
  // when it has arrived (and records it). The link's queue is kept here, at the
  // receiver: a link's receives come in its sends' order, as every schedule posts them.
  int64_t rendezvous(const Message& msg, int mb, int64_t sent, int64_t posted) {
    const int from = s_.stage_position[msg.from_stage], to = s_.stage_position[msg.to_stage];
    LinkState& state = link_state(from, to);
    const int64_t start = std::max({sent, posted, state.free_at});
    int64_t busy = cut_link_[msg.cut()].busy_ns, latency = cut_link_[msg.cut()].latency_ns;
    if (!o_.send_factors.empty()) {
      const double f = o_.send_factors[sent_flat_[2 * idx(msg.to_stage, mb) + static_cast<int>(msg.kind)]];
      busy = std::llround(static_cast<double>(busy) * f);
      latency = std::llround(static_cast<double>(latency) * f);
    }
    PS_INVARIANT(start >= state.free_at, "a link's time went backwards");
    state.free_at = start + busy;
    const int64_t at = start + busy + latency;
    if (recorder_) recorder_->transfer(from, to, msg.to_stage, mb, start, at - start);
    end_ = std::max(end_, at);
    return at;
  }

  // `flat` is the sending op's index (for its link jitter factor). Returns when the
  // tensor has arrived (now, on the same device). Inlined into both walks (with and
  // without offload): a call per op costs the walk about 3% (bench_sim, callgrind).
  [[gnu::always_inline]] int64_t send(const Message& msg, int mb, std::size_t flat) {
    const int from = s_.stage_position[msg.from_stage], to = s_.stage_position[msg.to_stage];
    if (from == to) {  // same device: the tensor is already there
      arrival(msg.kind, msg.to_stage, mb) = now_;
      return now_;
    }
    if (batched_) {  // posted: the receiver starts the transfer (rendezvous)
      arrival(msg.kind, msg.to_stage, mb) = now_;
      if (!sent_flat_.empty()) sent_flat_[2 * idx(msg.to_stage, mb) + static_cast<int>(msg.kind)] = flat;
      if (waiting_[to]) {
        waiting_[to] = 0;
        runnable_.push_back(to);
      }
      return now_;
    }
    LinkState& state = link_state(from, to);
    const int64_t start = std::max(now_, state.free_at);
    int64_t busy = cut_link_[msg.cut()].busy_ns, latency = cut_link_[msg.cut()].latency_ns;
    if (!o_.send_factors.empty()) {
      const double f = o_.send_factors[flat];
      busy = std::llround(static_cast<double>(busy) * f);
      latency = std::llround(static_cast<double>(latency) * f);
    }
    state.free_at = start + busy;
    const int64_t at = start + busy + latency;
    if (recorder_) recorder_->transfer(from, to, msg.to_stage, mb, start, at - start);
    arrival(msg.kind, msg.to_stage, mb) = at;
    end_ = std::max(end_, at);
    if (waiting_[to]) {
      waiting_[to] = 0;
      runnable_.push_back(to);
    }
    return at;
  }

  // The optimizer step ends the device's step: after its last op, or after the all-reduce.
  void start_optimizer(int d, int64_t at) {
    const int64_t dur = device_optimizer_ns(d);
    if (dur == 0) return;
    if (recorder_) recorder_->optimizer(d, 0, at, dur);
    end_ = std::max(end_, at + dur);
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
    const int64_t done = now_ + dur;
    end_ = std::max(end_, done);
    if (recorder_) recorder_->memory(d, done, current_act_[d], current_total_[d] - current_act_[d]);
    start_optimizer(d, done);
    return true;
  }

  StepReport make_report() {
    step_end_.back() = end_;  // the last step ends with the run (its last transfer or optimizer step)
    const WalkTotals totals{busy_, peak_act_, peak_total_, peak_versions_, step_end_, end_, stages_of_};
    fill_prediction(report_, s_, c_, h_, o_, totals, blocking_, post_validation_);
    if (offload_) {
      const int64_t host = report_.host_memory_limit_bytes;
      for (PositionReport& st : report_.positions) {
        offload_->fill(st);
        if (host > 0 && st.host_peak_bytes > host) st.fits = false;  // over host_link.memory_bytes: the planner skips it
      }
      report_.offload = to_string(o_.offload.policy);
      report_.notes.push_back(offload_note(o_.offload));
      offload_->write_host_memory(recorder_ ? &report_.timeline : nullptr);
    }
    return std::move(report_);
  }

  const Schedule& s_;
  const CostModel& c_;
  const Hardware& h_;
  const SimOptions& o_;
  const int K_, S_, M_;
  const bool post_validation_ = o_.optimizer_step == OptimizerStep::PostValidation && !s_.asynchronous();
  const bool blocking_ = o_.p2p == P2p::Blocking;
  const bool batched_ = o_.p2p == P2p::Batched;
  // Batched p2p with link jitter: per message slot (as arrival_), the sending op's index.
  std::vector<std::size_t> sent_flat_ = std::vector<std::size_t>(
      batched_ && !o_.send_factors.empty() ? 2 * static_cast<std::size_t>(S_) * static_cast<std::size_t>(M_) : 0, 0);
  const RuntimeCosts* const rt_ = o_.runtime && o_.runtime->any() ? o_.runtime : nullptr;
  const std::vector<std::vector<int>> stages_of_ = [this] {
    std::vector<std::vector<int>> out(static_cast<std::size_t>(s_.positions()));
    for (int st = 0; st < s_.stages(); ++st) out[s_.stage_position[st]].push_back(st);
    return out;
  }();
  std::vector<std::size_t> first_op_;  // device d's ops are [first_op_[d], first_op_[d + 1]) in per-op arrays
  std::vector<int> runnable_;          // devices to walk next
  int64_t now_ = 0, end_ = 0;
  std::vector<int64_t> arrival_;  // per (stage, micro-batch, message kind); -1 until sent
  std::vector<CutLink> cut_link_;  // per cut (index of the later stage): the transfer's link times
  std::vector<OpRule> rules_;      // per (op kind, stage)
  std::vector<int64_t> saved_;     // per op: an overlapped pair's saving (overlap_savings); empty: none
  std::vector<int64_t> held_, held_total_;  // per (stage, micro-batch): activations; everything
  std::vector<int64_t> current_total_, peak_total_;  // per device, above the static bytes
  std::vector<std::size_t> cursor_;
  std::vector<uint8_t> waiting_;  // parked until a send to the device
  std::vector<int64_t> free_at_, busy_, current_act_, peak_act_;
  std::vector<LinkState> next_link_, prev_link_;
  std::map<std::pair<int, int>, LinkState> other_links_;
  std::vector<std::optional<WeightVersions>> versions_;  // per stage; empty under a flush
  std::vector<int64_t> version_bytes_;  // per device: kept weight copies (in current_total_ too)
  std::vector<int> peak_versions_;      // per device: most weight versions held at once
  std::vector<int64_t> step_end_;       // per step: when its last op (and update) ended
  StepReport report_;
  std::optional<TimelineRecorder> recorder_;
  std::optional<SimOffload> offload_;  // activation offload (sim/offload.h); none without
};

}  // namespace

std::size_t op_offset(const Schedule& schedule, int device) {
  std::size_t n = 0;
  for (int d = 0; d < device; ++d) n += schedule.position_ops[d].size();
  return n;
}

namespace {

// One run, with the plan's offload (sim/offload.h's offload_decision: selective first
// runs without it to learn each op's start and end, then chooses the stashes that delay nothing).
StepReport run_sim(const Schedule& s, const CostModel& c, const Hardware& h, const SimOptions& o) {
  if (!o.offload.active()) return PipelineSim(s, c, h, o).run();
  return PipelineSim(s, c, h, o, offload_decision(s, c, h, o)).run();
}

}  // namespace

StepReport simulate(const Schedule& schedule, const CostModel& costs, const Hardware& hardware,
                    const SimOptions& options) {
  if (options.steps < 1) throw InputError("--steps: expected at least 1, got " + std::to_string(options.steps));
  if (options.optimizer_step == OptimizerStep::PostValidation && !schedule.asynchronous() && options.steps > 1) {
    return run_sim(unroll_steps(schedule, options.steps), costs, hardware, options);
  }
  StepReport r = run_sim(schedule, costs, hardware, options);
  if (!schedule.asynchronous() && options.steps > 1) repeat_step(r, options.steps);
  return r;
}

int64_t input_pass_freed_bytes(const StageCost& cost, int stage, const RuntimeCosts* runtime) {
  return input_pass_freed_bytes(cost.freed_at_input_bytes, cost.loss_bytes, stage == 0, runtime);
}

}  // namespace pipescope
