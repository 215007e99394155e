// Generators of the later zero-bubble family and DeepSeek's DualPipeV: zb-h2, zb-v,
// dualpipev, and zb-auto's unit-time constructive order. zb-h2 and zb-auto are greedy
// list schedules (core/list_schedule.h) with the limits the paper states; zb-v and
// dualpipev write the fixed phase pattern of PyTorch's ScheduleZBVZeroBubble and of
// deepseek-ai/DualPipe's dualpipev.py.
// Invariant: each returns a valid schedule (validate_schedule) holding F, and I + W or
// B, of every (stage, micro-batch) once; the V-shapes place stages d and 2K-1-d on d.
#include <algorithm>
#include <deque>
#include <tuple>

#include "core/error.h"
#include "core/list_schedule.h"
#include "core/schedule.h"

namespace pipescope {

namespace {

Schedule finish(Schedule s, bool recompute) { return recompute ? with_recompute(std::move(s)) : s; }

}  // namespace

// ZB-H2 (Qi et al., ICLR 2024, section 2.2): device d may hold min(2(K-d)-1, M)
// micro-batches, so its warm-up runs 2(K-d)-1 forwards, enough to fill the time
// until the first input gradient comes back; W runs when neither F nor I can
// (the tail's W passes fill the drain). With T_F = T_B = T_W each device works
// without a gap from its first op to its last: the longest device span is
// 3M T, the bubble (K-1)(T_F + T_B - 2T_W) = 0. Peak: 2K-1 micro-batches on stage 0.
Schedule make_zb_h2(int devices, int microbatches, bool recompute) {
  check_schedule_spec({ScheduleKind::ZeroBubbleH2, devices, microbatches, 1, recompute});
  ListPolicy p = ListPolicy::unit(stage_device_map(ScheduleKind::ZeroBubbleH2, devices, 1), microbatches);
  for (int d = 0; d < devices; ++d) {
    p.max_alive[d] = std::min(2 * devices - 1, microbatches);
    p.max_warmup[d] = std::min(2 * (devices - d) - 1, microbatches);
  }
  return finish(list_schedule(p, "zb-h2"), recompute);
}

// ZB-V (Qi et al., "Zero Bubble Pipeline Parallelism", section 6; PyTorch's
// ScheduleZBVZeroBubble): 2 chunks per device in V order, each chunk half a 1F1B
// stage. Device d of K: warm-up 2(K-d)-1 F of chunk 0, d x (F1 F0), K-d x (F1 I1 W1);
// steady F0 I0 W0 F1 I1 W1; cool-down d x (I0 I1), K-d x (I0 W0), then the
// remaining W of chunk 1 and chunk 0. Written for max(M, 2K-1) micro-batches, the ops
// of micro-batches >= M dropped (PyTorch's rule). 1F1B's peak activation memory: 2K
// chunk-micro-batches = K whole micro-batches on every device.
Schedule make_zb_v(int devices, int microbatches, bool recompute) {
  check_schedule_spec({ScheduleKind::ZeroBubbleV, devices, microbatches, 2, recompute});
  const int K = devices, M = microbatches, n = std::max(2 * K - 1, M);
  Schedule s;
  s.name = "zb-v";
  s.num_microbatches = M;
  s.stage_device = stage_device_map(ScheduleKind::ZeroBubbleV, K, 2);
  for (int d = 0; d < K; ++d) {
    const int stage[2] = {d, 2 * K - 1 - d};
    int f[2] = {0, 0}, b[2] = {0, 0}, w[2] = {0, 0};
    std::vector<Op> ops;
    auto add = [&](OpKind kind, int chunk, int& counter) {
      if (counter < M) ops.push_back({kind, stage[chunk], counter});
      ++counter;
    };
    for (int i = 0; i < 2 * (K - d) - 1; ++i) add(OpKind::Forward, 0, f[0]);
    for (int i = 0; i < d; ++i) add(OpKind::Forward, 1, f[1]), add(OpKind::Forward, 0, f[0]);
    for (int i = 0; i < K - d; ++i) {
      add(OpKind::Forward, 1, f[1]);
      add(OpKind::BackwardInput, 1, b[1]);
      add(OpKind::BackwardWeight, 1, w[1]);
    }
    while (f[1] < f[0] || f[0] < n) {
      if (f[0] < n) add(OpKind::Forward, 0, f[0]);
      add(OpKind::BackwardInput, 0, b[0]);
      add(OpKind::BackwardWeight, 0, w[0]);
      add(OpKind::Forward, 1, f[1]);
      add(OpKind::BackwardInput, 1, b[1]);
      add(OpKind::BackwardWeight, 1, w[1]);
    }
    for (int i = 0; i < d; ++i) add(OpKind::BackwardInput, 0, b[0]), add(OpKind::BackwardInput, 1, b[1]);
    for (int i = 0; i < K - d; ++i) add(OpKind::BackwardInput, 0, b[0]), add(OpKind::BackwardWeight, 0, w[0]);
    while (w[1] < b[1]) add(OpKind::BackwardWeight, 1, w[1]);
    while (w[0] < b[0]) add(OpKind::BackwardWeight, 0, w[0]);
    s.device_ops.push_back(std::move(ops));
  }
  return finish(std::move(s), recompute);
}

// zb-auto's constructive order: the list schedule under a cap of N micro-batches
// alive per device (the zero-bubble repository's max pending backward), warm-up as
// deep as the cap allows (min(N, 2(K-d)-1)), W deferred to fill gaps.
Schedule make_zb_auto_unit(int devices, int microbatches, int max_inflight, bool recompute) {
  check_schedule_spec({ScheduleKind::ZeroBubbleAuto, devices, microbatches, 1, recompute, max_inflight});
  const int cap = max_inflight > 0 ? max_inflight : devices;
  ListPolicy p = ListPolicy::unit(stage_device_map(ScheduleKind::ZeroBubbleAuto, devices, 1), microbatches);
  for (int d = 0; d < devices; ++d) {
    p.max_alive[d] = std::min(cap, microbatches);
    p.max_warmup[d] = std::min({cap, 2 * (devices - d) - 1, microbatches});
  }
  Schedule s = list_schedule(p, "zb-auto");
  return finish(std::move(s), recompute);
}

namespace {

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
Schedule make_dualpipev(int devices, int microbatches, bool recompute) {
  check_schedule_spec({ScheduleKind::DualPipeV, devices, microbatches, 2, recompute});
  const int K = devices, M = microbatches;
  if (M < 2 * K) {
    throw InputError("microbatches: dualpipev needs at least 2 micro-batches per stage position (M >= 2K, "
                     "DualPipe's num_chunks >= num_ranks * 2); got M = " + std::to_string(M) +
                     ", K = " + std::to_string(K));
  }
  Schedule s;
  s.name = "dualpipev";
  s.num_microbatches = M;
  s.stage_device = stage_device_map(ScheduleKind::DualPipeV, K, 2);
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
    s.device_ops.push_back(dev.take());
  }
  std::sort(s.overlapped_backwards.begin(), s.overlapped_backwards.end(), [](const Op& a, const Op& b) {
    return std::tie(a.stage, a.microbatch) < std::tie(b.stage, b.microbatch);
  });
  return finish(std::move(s), recompute);
}

}  // namespace pipescope
