// torch.distributed.pipelining's looped schedules with v stages per position, stage
// c K + d on position d (interleaving's map): ScheduleLoopedBFS (breadth-first,
// Lamy-Poirier 2023) and ScheduleInterleavedZeroBubble (ZB1P over v chunks, Qi et al.,
// ICLR 2024). Written from PyTorch 2.13's rules, action for action (idle slots dropped).
// Invariant: each returns a valid schedule holding F and B (looped-bfs) or I + W
// (interleaved-zb) of every (stage, micro-batch) once.
#include <algorithm>

#include "core/error.h"
#include "core/schedule.h"
#include "core/schedules/builder.h"

namespace pipescope {

using schedules::add_recompute;
using schedules::empty_schedule;

// Breadth-first: each position runs every micro-batch's F of its first chunk, then of
// its next, ..., then the backwards chunk by chunk from the last, micro-batches in
// reverse (ScheduleLoopedBFS._calculate_single_rank_operations). Any M.
Schedule make_looped_bfs(int devices, int microbatches, int chunks, bool r_ops) {
  ScheduleSpec spec{ScheduleKind::LoopedBFS, devices, microbatches, chunks, r_ops};
  check_schedule_spec(spec);
  Schedule s = empty_schedule(spec);
  const int K = devices, M = microbatches, v = chunks;
  for (int d = 0; d < K; ++d) {
    auto& ops = s.position_ops[d];
    ops.reserve(2 * static_cast<std::size_t>(M) * v);
    for (int c = 0; c < v; ++c) {
      for (int m = 0; m < M; ++m) ops.push_back({OpKind::Forward, c * K + d, m});
    }
    for (int c = v - 1; c >= 0; --c) {
      for (int m = M - 1; m >= 0; --m) ops.push_back({OpKind::Backward, c * K + d, m});
    }
  }
  add_recompute(s);
  return s;
}

namespace {

// One position's ZB1P order (torch 2.13's _get_1f1b_rank_ops with enable_zero_bubble):
// micro-batches go in rounds of `per_round`; the k-th F runs chunk (k / per_round) mod v,
// the k-th I chunk v-1-((k - warm-up) / per_round) mod v; warm-up is (v-1) per_round +
// K-1-d forwards; after d steady pairs each I is followed by the oldest pending W.
class ZeroBubbleRank {
 public:
  ZeroBubbleRank(int K, int d, int M, int v, int per_round)
      : K_(K), d_(d), v_(v), per_round_(per_round),
        warmup_(std::min((v - 1) * per_round + (K - 1 - d), M * v)),
        f_(static_cast<std::size_t>(K) * v, 0), i_(f_), w_(f_) {}

  std::vector<Op> ops(int M) {
    const int total = M * v_;  // F count = I count = W count
    for (int k = 0; k < total + warmup_; ++k) {
      if (k < total) push(OpKind::Forward, forward_stage(k));
      if (k < warmup_) continue;
      const int b = k;  // the I of step b (steps >= warm-up carry one I each)
      push(OpKind::BackwardInput, backward_stage(b));
      inputs_.push_back(b);
      if (b - warmup_ >= d_) push(OpKind::BackwardWeight, backward_stage(inputs_[weights_++]));
    }
    while (weights_ < inputs_.size()) push(OpKind::BackwardWeight, backward_stage(inputs_[weights_++]));
    return std::move(ops_);
  }

 private:
  int forward_stage(int k) const { return ((k / per_round_) % v_) * K_ + d_; }
  int backward_stage(int k) const { return (v_ - 1 - ((k - warmup_) / per_round_) % v_) * K_ + d_; }
  void push(OpKind kind, int stage) {
    auto& next = kind == OpKind::Forward ? f_ : kind == OpKind::BackwardInput ? i_ : w_;
    ops_.push_back({kind, stage, next[stage]++});
  }

  const int K_, d_, v_, per_round_, warmup_;
  std::vector<int> f_, i_, w_;  // per stage: the next micro-batch of each op kind
  std::vector<int> inputs_;  // the step of each I issued, in order
  std::size_t weights_ = 0;  // W issued (they follow the I in order)
  std::vector<Op> ops_;
};

}  // namespace

// ScheduleInterleavedZeroBubble: rounds = max(1, M / K) of M / rounds micro-batches;
// M must be a multiple of the rounds (PyTorch's rule, which refuses the rest).
Schedule make_interleaved_zb(int devices, int microbatches, int chunks, bool r_ops) {
  ScheduleSpec spec{ScheduleKind::InterleavedZeroBubble, devices, microbatches, chunks, r_ops};
  check_schedule_spec(spec);  // M a multiple of the rounds (core/schedule_kinds.h)
  const int K = devices, M = microbatches, rounds = std::max(1, M / K);
  Schedule s = empty_schedule(spec);
  for (int d = 0; d < K; ++d) s.position_ops[d] = ZeroBubbleRank(K, d, M, chunks, M / rounds).ops(M);
  add_recompute(s);
  return s;
}

}  // namespace pipescope
