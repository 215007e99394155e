// zb-auto's search (see zero_bubble_search.h). Every candidate is a complete, valid
// schedule that holds at most the cap on every device; the simulator ranks them by
// the longest device span, ties by candidate order, so the result is deterministic.
#include "planner/zero_bubble_search.h"

#include <algorithm>

#include "core/error.h"
#include "core/list_schedule.h"
#include "sim/simulator.h"
#include "sim/stage_span.h"

namespace pipescope {

Schedule schedule_for_costs(const Plan& plan, const CostModel& costs, const Hardware& hardware,
                            const ZeroBubbleSearchOptions& options) {
  if (!plan.schedule_file.empty() || plan.schedule != ScheduleKind::ZeroBubbleAuto) return schedule_for(plan);
  const int cap = plan.max_inflight > 0 ? plan.max_inflight : plan.pipeline_devices();
  Schedule s = search_zero_bubble(costs, hardware, cap, plan.microbatches, nullptr, options);
  return plan.recompute ? with_recompute(std::move(s)) : s;
}

int max_alive_microbatches(const Schedule& s) {
  int most = 0;
  for (const auto& ops : s.device_ops) {
    int alive = 0;
    for (const Op& op : ops) {
      if (op.kind == OpKind::Forward) most = std::max(most, ++alive);
      if (op.kind == OpKind::Backward || op.kind == OpKind::BackwardWeight) --alive;
    }
  }
  return most;
}

namespace {

class Search {
 public:
  // `budget` simulations at most: a count, not a clock, so the result never depends on the machine.
  Search(const CostModel& c, const Hardware& h, int cap, int M, const ZeroBubbleSearchOptions& o)
      : c_(c), h_(h), cap_(cap), M_(M), budget_(std::max(1, o.max_evaluations)), span_(o.longest_span) {
    K_ = static_cast<int>(c.position_device.size());
    base_ = ListPolicy::unit(stage_device_map(ScheduleKind::ZeroBubbleAuto, K_, 1), M);
    for (int s = 0; s < K_; ++s) {
      base_.forward_ns[s] = c.stages[s].forward_ns;
      base_.input_ns[s] = c.stages[s].backward_input_ns;
      base_.weight_ns[s] = c.stages[s].backward_weight_ns;
      if (s + 1 < K_) {
        const Link& l = h.link_between(c.position_device[s], c.position_device[s + 1]);
        base_.hop_ns = std::max(base_.hop_ns, l.latency_ns() + l.busy_ns(c.stages[s].send_bytes));
      }
    }
  }

  // Simulated longest span of `s`, or -1 when it holds more than the cap.
  int64_t score(const Schedule& s) {
    if (evaluations_ >= budget_ || max_alive_microbatches(s) > cap_) return -1;
    ++evaluations_;
    SimOptions o;
    o.record_timeline = span_;
    const StepReport r = simulate(s, c_, h_, o);
    return span_ ? longest_span(r) : r.step_ns;
  }

  // Keeps `s` when it is the shortest so far; a list policy also when it is the best
  // list policy so far (the local search starts from that one).
  void offer(const Schedule& s, const std::string& label, const ListPolicy* policy) {
    const int64_t span = score(s);
    if (span < 0) return;
    if (policy && (policy_span_ < 0 || span < policy_span_)) {
      policy_span_ = span;
      best_policy_ = *policy;
      policy_label_ = label;
    }
    if (best_span_ >= 0 && span >= best_span_) return;
    best_span_ = span;
    best_ = s;
    best_label_ = label;
  }

  ListPolicy policy(int depth_kind, bool forward_first, bool lookahead) const {
    ListPolicy p = base_;
    p.forward_first = forward_first;
    p.weight_lookahead = lookahead;
    for (int d = 0; d < K_; ++d) {
      const int depth = depth_kind == 0 ? K_ - d : depth_kind == 1 ? 2 * (K_ - d) - 1 : cap_;
      p.max_alive[d] = std::min(cap_, M_);
      p.max_warmup[d] = std::max(1, std::min({depth, cap_, M_}));
    }
    return p;
  }

  void constructive() {
    offer(make_zb_h2(K_, M_), "zb-h2", nullptr);
    offer(make_zb_h1(K_, M_), "zb-h1", nullptr);
    const char* depths[] = {"K-d", "2(K-d)-1", "N"};
    for (int depth : {1, 0, 2}) {  // ZB-H2's depth first: the likeliest winner on a short budget
      for (bool ff : {true, false}) {
        for (bool look : {false, true}) {
          if (evaluations_ >= budget_) return;  // building an order costs about a simulation
          const ListPolicy p = policy(depth, ff, look);
          offer(list_schedule(p, "zb-auto"), std::string("list warm-up ") + depths[depth] + (ff ? " F-first" : " I-first") +
                                                 (look ? " W-lookahead" : ""),
                &p);
        }
      }
    }
    offer(make_1f1b(K_, M_), "1f1b", nullptr);
    if (best_span_ < 0) throw InputError("--max-inflight " + std::to_string(cap_) + ": no schedule fits");
  }

  // Coordinate descent on the per-device warm-up depth of the best list policy.
  void local_search(int passes) {
    if (policy_span_ < 0) return;
    for (int pass = 0; pass < passes; ++pass) {
      bool improved = false;
      for (int d = 0; d < K_; ++d) {
        for (int step : {+1, -1}) {
          if (evaluations_ >= budget_) return;
          ListPolicy p = best_policy_;
          p.max_warmup[d] += step;
          if (p.max_warmup[d] < 1 || p.max_warmup[d] > std::min(cap_, M_)) continue;
          const int64_t before = policy_span_;
          offer(list_schedule(p, "zb-auto"), local_label(), &p);
          improved |= policy_span_ < before;
        }
      }
      if (!improved) break;
    }
  }

  std::string local_label() const {
    const std::string tag = " + local search";
    return policy_label_.size() >= tag.size() && policy_label_.compare(policy_label_.size() - tag.size(), tag.size(), tag) == 0
               ? policy_label_
               : policy_label_ + tag;
  }

  Schedule result(ZeroBubbleSearchReport* report) {
    best_.name = "zb-auto";
    if (report) {
      report->span_ns = best_span_;
      int64_t bound = 0;
      for (const StageCost& st : c_.stages) {
        bound = std::max(bound, M_ * (st.forward_ns + st.backward_input_ns + st.backward_weight_ns));
      }
      report->bound_ns = bound;
      report->evaluations = evaluations_;
      report->start = best_label_;
    }
    return std::move(best_);
  }

 private:
  const CostModel& c_;
  const Hardware& h_;
  const int cap_, M_, budget_;
  const bool span_;
  int K_ = 0;
  ListPolicy base_, best_policy_;
  Schedule best_;
  std::string best_label_, policy_label_;
  int64_t best_span_ = -1, policy_span_ = -1;
  int evaluations_ = 0;
};

}  // namespace

Schedule search_zero_bubble(const CostModel& costs, const Hardware& hardware, int max_inflight, int microbatches,
                            ZeroBubbleSearchReport* report, const ZeroBubbleSearchOptions& options) {
  if (max_inflight < 1) {
    throw InputError("--max-inflight: expected at least 1 micro-batch alive per stage, got " + std::to_string(max_inflight));
  }
  if (costs.stages.size() != costs.position_device.size()) {
    throw InputError("zb-auto: expected one stage per device (1 chunk), got " + std::to_string(costs.stages.size()) +
                     " stages on " + std::to_string(costs.position_device.size()) + " devices");
  }
  check_schedule_spec({ScheduleKind::ZeroBubbleAuto, static_cast<int>(costs.stages.size()), microbatches, 1});
  Search search(costs, hardware, max_inflight, microbatches, options);
  search.constructive();
  search.local_search(3);
  return search.result(report);
}

}  // namespace pipescope
