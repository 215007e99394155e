// Deterministic time for an in-process run (RunOptions::model_time): every worker keeps
// its own clock, which its ops advance by the cost model's durations instead of reading
// the steady clock, so a run's times are the simulator's rules replayed by the real
// workers. Invariant: a worker's clock never goes backwards; a tensor's arrival is
// stamped by its sender (link start = max(op end, the directed link free), + busy time
// + latency, as sim/simulator.cpp) before the tensor is sent, and the receiver reads the
// stamps of one message key in send order (the transport's order for that key).
// Shared by every worker of the run; thread-safe.
//   ModelClock clock(profile, plan, schedule, hardware, P2p::Blocking);
//   t = clock.receive(op, t);  t += clock.op_ns(op);  arrival = clock.send(msg, mb, t);
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

#include "core/cost_model.h"
#include "core/hardware.h"
#include "core/plan.h"
#include "core/profile.h"
#include "core/schedule.h"

namespace pipescope::exec {

class ModelClock {
 public:
  ModelClock(const Profile& profile, const Plan& plan, const Schedule& schedule, const Hardware& hardware, P2p p2p);

  int64_t op_ns(const Op& op) const;       // core/op_rules.h's op_duration_ns on the op's stage
  int64_t optimizer_ns(int position) const;  // the position's stages' optimizer steps together
  int64_t stage_optimizer_ns(int stage) const;
  bool blocking() const { return p2p_ == P2p::Blocking; }

  // The sender's side, at the end of the sending op (`now`): stamps the tensor's
  // arrival and returns {link start, arrival}; a same-device tensor arrives at `now`.
  std::pair<int64_t, int64_t> send(const Message& msg, int microbatch, int64_t now);
  // The receiving op's start given its device is free at `now`: max(now (+ the
  // transfer's time when blocking and the sender is another device), the arrival).
  int64_t receive(const Op& op, const Message& msg, int64_t now);

  // A barrier in model time: every worker reaches(step, its clock) before the barrier
  // and reads reached(step) after it (the latest clock of all).
  void reach(int step, int64_t now);
  int64_t reached(int step) const;

 private:
  using Key = std::tuple<int, int, int>;  // message kind, receiving stage, micro-batch
  const Schedule& schedule_;
  CostModel costs_;
  P2p p2p_;
  std::vector<int64_t> cut_busy_, cut_latency_;  // per cut (the later stage's index)
  mutable std::mutex mu_;
  std::map<Key, std::deque<int64_t>> arrivals_;
  std::map<std::pair<int, int>, int64_t> link_free_;  // per directed (device, device)
  std::map<int, int64_t> reached_;
};

}  // namespace pipescope::exec
