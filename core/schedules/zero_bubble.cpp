// Generators of the zero-bubble family (Qi et al., ICLR 2024): zb-h1, zb-h2, zb-v and
// zb-auto's unit-time constructive order. zb-h1 plays unit-time ops; zb-h2 and zb-auto
// are greedy list schedules (core/schedules/list_schedule.h) with the limits the paper
// states; zb-v writes the fixed phase pattern of PyTorch's ScheduleZBVZeroBubble.
// Invariant: each returns a valid schedule (validate_schedule) holding F, and I + W or
// B, of every (stage, micro-batch) once; zb-v places stages d and 2K-1-d on d.
#include <algorithm>
#include <deque>
#include <tuple>

#include "core/error.h"
#include "core/schedule.h"
#include "core/schedules/builder.h"
#include "core/schedules/list_schedule.h"

namespace pipescope {

namespace {

Schedule finish(Schedule s, bool r_ops) { return r_ops ? with_recompute(std::move(s)) : s; }

}  // namespace

// ZB-H2 (Qi et al., ICLR 2024, section 2.2): device d may hold min(2(K-d)-1, M)
// micro-batches, so its warm-up runs 2(K-d)-1 forwards, enough to fill the time
// until the first input gradient comes back; W runs when neither F nor I can
// (the tail's W passes fill the drain). With T_F = T_B = T_W each device works
// without a gap from its first op to its last: the longest device span is
// 3M T, the bubble (K-1)(T_F + T_B - 2T_W) = 0. Peak: 2K-1 micro-batches on stage 0.
Schedule make_zb_h2(int devices, int microbatches, bool r_ops) {
  check_schedule_spec({ScheduleKind::ZeroBubbleH2, devices, microbatches, 1, r_ops});
  ListPolicy p = ListPolicy::unit(stage_position_map(ScheduleKind::ZeroBubbleH2, devices, 1), microbatches);
  for (int d = 0; d < devices; ++d) {
    p.max_alive[d] = std::min(2 * devices - 1, microbatches);
    p.max_warmup[d] = std::min(2 * (devices - d) - 1, microbatches);
  }
  return finish(list_schedule(p, to_string(ScheduleKind::ZeroBubbleH2)), r_ops);
}

// ZB-V (Qi et al., "Zero Bubble Pipeline Parallelism", section 6; PyTorch's
// ScheduleZBVZeroBubble): 2 chunks per device in V order, each chunk half a 1F1B
// stage. Device d of K: warm-up 2(K-d)-1 F of chunk 0, d x (F1 F0), K-d x (F1 I1 W1);
// steady F0 I0 W0 F1 I1 W1; cool-down d x (I0 I1), K-d x (I0 W0), then the
// remaining W of chunk 1 and chunk 0. Written for max(M, 2K-1) micro-batches, the ops
// of micro-batches >= M dropped (PyTorch's rule). 1F1B's peak activation memory: 2K
// chunk-micro-batches = K whole micro-batches on every device.
Schedule make_zb_v(int devices, int microbatches, bool r_ops) {
  check_schedule_spec({ScheduleKind::ZeroBubbleV, devices, microbatches, 2, r_ops});
  const int K = devices, M = microbatches, n = std::max(2 * K - 1, M);
  Schedule s;
  s.name = to_string(ScheduleKind::ZeroBubbleV);
  s.num_microbatches = M;
  s.stage_position = stage_position_map(ScheduleKind::ZeroBubbleV, K, 2);
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
    s.position_ops.push_back(std::move(ops));
  }
  return finish(std::move(s), r_ops);
}

// zb-auto's constructive order: the list schedule under a cap of N micro-batches
// alive per device (the zero-bubble repository's max pending backward), warm-up as
// deep as the cap allows (min(N, 2(K-d)-1)), W deferred to fill gaps.
Schedule make_zb_auto_unit(int devices, int microbatches, int max_inflight, bool r_ops) {
  check_schedule_spec({ScheduleKind::ZeroBubbleAuto, devices, microbatches, 1, r_ops, max_inflight});
  const int cap = max_inflight > 0 ? max_inflight : devices;
  ListPolicy p = ListPolicy::unit(stage_position_map(ScheduleKind::ZeroBubbleAuto, devices, 1), microbatches);
  for (int d = 0; d < devices; ++d) {
    p.max_alive[d] = std::min(cap, microbatches);
    p.max_warmup[d] = std::min({cap, 2 * (devices - d) - 1, microbatches});
  }
  Schedule s = list_schedule(p, to_string(ScheduleKind::ZeroBubbleAuto));
  return finish(std::move(s), r_ops);
}

// ZB-H1 order (Qi et al., ICLR 2024), found by list-scheduling the split-backward
// pipeline with unit costs (F = Bi = W = 1, free communication). An idle device runs,
// in this priority: the next F if its input is there, fewer than min(K - s, M)
// micro-batches wait for their Bi (1F1B's warm-up bound) and fewer than min(K, M) are
// alive (forward started, W not done); else the next ready Bi; else a deferred W.
// W therefore fills what would be bubbles: with T_F = T_B = T_W the step takes
// (3M + K - 1) T, a bubble of (K - 1) / (3M + K - 1), about a third of 1F1B's, and no
// stage holds more activations than 1F1B's first stage (K micro-batches).
Schedule make_zb_h1(int devices, int microbatches, bool r_ops) {
  ScheduleSpec spec{ScheduleKind::ZeroBubbleH1, devices, microbatches, 1, r_ops};
  check_schedule_spec(spec);
  Schedule s = schedules::empty_schedule(spec);
  const int K = devices, M = microbatches;
  // Completion time of F and Bi per (stage, micro-batch); -1 = not yet done.
  std::vector<std::vector<int64_t>> f_done(K, std::vector<int64_t>(M, -1));
  std::vector<std::vector<int64_t>> b_done(K, std::vector<int64_t>(M, -1));
  std::vector<int> next_f(K, 0), next_b(K, 0), alive(K, 0), before_b(K, 0);
  std::vector<std::deque<int>> pending_w(K);
  std::vector<int64_t> busy_until(K, 0);
  std::vector<Op> running(K, Op{OpKind::Forward, -1, -1});
  int64_t remaining = 3 * static_cast<int64_t>(K) * M;
  for (int64_t t = 0; remaining > 0; ++t) {
    for (int d = 0; d < K; ++d) {  // completions at t
      Op& op = running[d];
      if (op.stage < 0 || busy_until[d] != t) continue;
      if (op.kind == OpKind::Forward) f_done[d][op.microbatch] = t;
      if (op.kind == OpKind::BackwardInput) {
        b_done[d][op.microbatch] = t;
        --before_b[d];
        pending_w[d].push_back(op.microbatch);
      }
      if (op.kind == OpKind::BackwardWeight) --alive[d];
      op.stage = -1;
      --remaining;
    }
    for (int d = 0; d < K; ++d) {  // idle devices pick their next op
      if (running[d].stage >= 0) continue;
      const int in_flight_limit = std::min(K - d, M), alive_limit = std::min(K, M);
      int b = next_b[d], f = next_f[d];
      bool b_ready = b < M && f_done[d][b] >= 0 && (d == K - 1 || b_done[d + 1][b] >= 0);
      bool f_ready = f < M && before_b[d] < in_flight_limit && alive[d] < alive_limit &&
                     (d == 0 || f_done[d - 1][f] >= 0);
      Op pick{OpKind::Forward, -1, -1};
      if (f_ready) {
        pick = {OpKind::Forward, d, f};
        ++next_f[d];
        ++alive[d];
        ++before_b[d];
      } else if (b_ready) {
        pick = {OpKind::BackwardInput, d, b};
        ++next_b[d];
      } else if (!pending_w[d].empty()) {
        pick = {OpKind::BackwardWeight, d, pending_w[d].front()};
        pending_w[d].pop_front();
      }
      if (pick.stage < 0) continue;
      running[d] = pick;
      busy_until[d] = t + 1;
      s.position_ops[d].push_back(pick);
    }
  }
  schedules::add_recompute(s);
  return s;
}

}  // namespace pipescope
