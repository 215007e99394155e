// DeepSeek's DualPipeV (deepseek-ai/DualPipe dualpipev.py; PyTorch's
// ScheduleDualPipeV): a V-shape, stages d and 2K-1-d on device d, forward and backward
// chunks of different micro-batches overlapped in pairs.
// Invariant: each returns a valid schedule (validate_schedule) holding F, and I + W or
// B, of every (stage, micro-batch) once; it needs M >= 2K.
#include <algorithm>
#include <deque>
#include <tuple>

#include "core/error.h"
#include "core/schedule.h"

namespace pipescope {

namespace {

Schedule finish(Schedule s, bool r_ops) { return r_ops ? with_recompute(std::move(s)) : s; }

// One device's DualPipeV order as dualpipev.py writes it: phase 0 is the device's
// first stage (d), phase 1 its second (2K-1-d); each phase's F and backward visit
// micro-batches in order; an overlapped F&B pair runs F then B; a split backward
// queues its W, and a weight pass runs the oldest queued W.
class DualPipeVDevice {
 public:
  DualPipeVDevice(int K, int d) : stage_{d, 2 * K - 1 - d} {}
  void forward(int phase) { ops_.push_back({OpKind::Forward, stage_[phase], next_f_[phase]++}); }
  void backward(int phase, bool split) {
    const Op op{split ? OpKind::BackwardInput : OpKind::Backward, stage_[phase], next_b_[phase]++};
    ops_.push_back(op);
    if (split) weights_.push_back({OpKind::BackwardWeight, op.stage, op.microbatch});
  }
  void overlapped(int forward_phase, int backward_phase) {
    forward(forward_phase);
    backward(backward_phase, false);
    overlapped_.push_back(ops_.back());
  }
  const std::vector<Op>& overlapped_backwards() const { return overlapped_; }
  void weight() {
    if (weights_.empty()) return;
    ops_.push_back(weights_.front());
    weights_.pop_front();
  }
  std::vector<Op> take() { return std::move(ops_); }

 private:
  int stage_[2];
  int next_f_[2] = {0, 0}, next_b_[2] = {0, 0};
  std::vector<Op> ops_;
  std::vector<Op> overlapped_;  // the B of each overlapped F&B pair
  std::deque<Op> weights_;
};

}  // namespace

// DualPipeV (deepseek-ai/DualPipe dualpipev.py; PyTorch's ScheduleDualPipeV): eight
// steps per device d of K: (1) 2(K-d-1) F0; (2) d+1 x F0 F1; (3) K-d-1 x I1 W1 F1;
// (4) M-2K+d+1 x F0&B1, F1&B0 (the last device's first pair not overlapped);
// (5) K-d-1 x B1, F1&B0; (6) d+1 x B1 B0, the second half split (I); (7) K-d-1 x
// W, I0; (8) d+1 x W. It needs M >= 2K (dualpipev.py's num_chunks >= num_ranks * 2).
Schedule make_dualpipev(int devices, int microbatches, bool r_ops) {
  check_schedule_spec({ScheduleKind::DualPipeV, devices, microbatches, 2, r_ops});  // M >= 2K
  const int K = devices, M = microbatches;
  Schedule s;
  s.name = to_string(ScheduleKind::DualPipeV);
  s.num_microbatches = M;
  s.stage_position = stage_position_map(ScheduleKind::DualPipeV, K, 2);
  for (int d = 0; d < K; ++d) {
    DualPipeVDevice dev(K, d);
    for (int i = 0; i < 2 * (K - d - 1); ++i) dev.forward(0);
    for (int i = 0; i < d + 1; ++i) dev.forward(0), dev.forward(1);
    for (int i = 0; i < K - d - 1; ++i) dev.backward(1, true), dev.weight(), dev.forward(1);
    for (int i = 0; i < M - 2 * K + d + 1; ++i) {
      if (i == 0 && d == K - 1) {
        dev.forward(0);
        dev.backward(1, false);
      } else {
        dev.overlapped(0, 1);
      }
      dev.overlapped(1, 0);
    }
    for (int i = 0; i < K - d - 1; ++i) dev.backward(1, false), dev.overlapped(1, 0);
    bool split = false;
    const int step6 = d + 1;
    for (int i = 0; i < step6; ++i) {
      if (i == step6 / 2 && d % 2 == 1) split = true;
      dev.backward(1, split);
      if (i == step6 / 2 && d % 2 == 0) split = true;
      dev.backward(0, split);
    }
    for (int i = 0; i < K - d - 1; ++i) dev.weight(), dev.backward(0, true);
    for (int i = 0; i < d + 1; ++i) dev.weight();
    const std::vector<Op>& pairs = dev.overlapped_backwards();
    s.overlapped_backwards.insert(s.overlapped_backwards.end(), pairs.begin(), pairs.end());
    s.position_ops.push_back(dev.take());
  }
  std::sort(s.overlapped_backwards.begin(), s.overlapped_backwards.end(), [](const Op& a, const Op& b) {
    return std::tie(a.stage, a.microbatch) < std::tie(b.stage, b.microbatch);
  });
  return finish(std::move(s), r_ops);
}

}  // namespace pipescope
