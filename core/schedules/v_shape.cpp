// The V-shape schedules of controllable memory (Qi et al., "Pipeline Parallelism with
// Controllable Memory", NeurIPS 2024): v-min, v-half, v-zb. Stages d and 2K-1-d on
// position d. One building block places, on every position, the forward of chunk 0 (F0),
// of chunk 1 (F1), the input gradients (I1, then I0) and their weight gradients (W1, W0)
// in six unit slots; the block repeats every 6 slots, one micro-batch per repetition.
// Invariant: in every block each position's six ops fall in distinct slots mod 6 and
// every op comes at least one slot after what it needs, so the timed repetition is a
// valid schedule and its per-position order (ops sorted by slot) never deadlocks.
#include <algorithm>
#include <array>
#include <tuple>

#include "core/error.h"
#include "core/schedule.h"
#include "core/schedules/builder.h"
#include "core/schedules/v_squeeze.h"

namespace pipescope {

namespace {

constexpr int kSlots = 6;

// The block's shape (section 3.1 of the paper): each pass moves `delta` slots per
// position along the V's arms that run 0 -> K-1 (F0 and I1) and 1 slot back along the
// others (F1, I0); gaps g1, g2, g3 separate F0 -> F1 at the V's tip, F1 -> I1 at
// position 0 and I1 -> I0 at the tip. The offset sets the lifespan of a micro-batch on a
// position, hence its peak memory: delta = 1 (v-min), 2 (v-half), 5 (v-zb; 5 = -1 mod 6,
// so chunk 0 lives longest, like 1F1B). The gaps are the ones that place the block (six
// distinct slots mod 6 on every position) with the smallest peak and then the shortest
// unit-time step, found by trying all 216 triples in [1, 6]^3 for K = 2..20 and
// M = 2K, 4K (docs/schedules-new.md): they depend only on K mod 3 (v-min) or K mod 2 (v-half).
struct BlockShape {
  int delta, g1, g2, g3;
};

BlockShape block_shape(ScheduleKind kind, int K) {
  switch (kind) {
    case ScheduleKind::VMin: return K % 3 == 0 ? BlockShape{1, 3, 1, 3} : BlockShape{1, 1, 1, 1};
    case ScheduleKind::VHalf: return K % 2 == 0 ? BlockShape{2, 4, 1, 5} : BlockShape{2, 2, 1, 1};
    default: return {5, 1, 1, 1};  // VZeroBubble
  }
}

// Slots of F0, F1, I1, I0, W1, W0 on each position for micro-batch 0. W takes the
// first free slot after its I (cyclically): W1 first, then W0.
using BlockRow = std::array<int, 6>;

std::vector<BlockRow> building_block(ScheduleKind kind, int K) {
  const BlockShape b = block_shape(kind, K);
  std::vector<BlockRow> rows(K);
  for (int d = 0; d < K; ++d) rows[d][0] = b.delta * d;                                    // F0
  for (int d = K - 1; d >= 0; --d) rows[d][1] = d == K - 1 ? rows[d][0] + b.g1 : rows[d + 1][1] + 1;  // F1
  for (int d = 0; d < K; ++d) rows[d][2] = d == 0 ? rows[0][1] + b.g2 : rows[d - 1][2] + b.delta;   // I1
  for (int d = K - 1; d >= 0; --d) rows[d][3] = d == K - 1 ? rows[d][2] + b.g3 : rows[d + 1][3] + 1;  // I0
  for (BlockRow& r : rows) {
    std::array<bool, kSlots> used{};
    for (int t = 0; t < 4; ++t) {
      if (used[r[t] % kSlots]) {
        throw InputError("stages: the " + to_string(kind) + " building block cannot be placed on K = " +
                         std::to_string(K) + " positions (two passes share a slot)");
      }
      used[r[t] % kSlots] = true;
    }
    for (int w = 0; w < 2; ++w) {
      int j = 1;
      while (used[(r[2 + w] + j) % kSlots]) ++j;
      r[4 + w] = r[2 + w] + j;
      used[r[4 + w] % kSlots] = true;
    }
  }
  return rows;
}

Schedule make_v_block(ScheduleKind kind, int devices, int microbatches, bool r_ops) {
  ScheduleSpec spec{kind, devices, microbatches, 2, r_ops};
  check_schedule_spec(spec);
  Schedule s = schedules::empty_schedule(spec);
  const int K = devices, M = microbatches;
  const std::vector<BlockRow> rows = building_block(kind, K);
  constexpr OpKind kKinds[6] = {OpKind::Forward,       OpKind::Forward,        OpKind::BackwardInput,
                                OpKind::BackwardInput, OpKind::BackwardWeight, OpKind::BackwardWeight};
  constexpr int kChunk[6] = {0, 1, 1, 0, 1, 0};
  for (int d = 0; d < K; ++d) {
    std::vector<std::tuple<int64_t, int, int>> timed;  // (slot, pass, micro-batch)
    timed.reserve(6 * static_cast<std::size_t>(M));
    for (int t = 0; t < 6; ++t) {
      for (int m = 0; m < M; ++m) timed.emplace_back(rows[d][t] + int64_t{kSlots} * m, t, m);
    }
    std::sort(timed.begin(), timed.end());
    auto& ops = s.position_ops[d];
    ops.reserve(timed.size());
    for (const auto& [slot, t, m] : timed) {
      ops.push_back({kKinds[t], kChunk[t] == 0 ? d : 2 * K - 1 - d, m});
    }
  }
  // V-ZB: squeezed and filled under 1F1B's memory, K whole micro-batches (2K chunk stashes).
  if (kind == ScheduleKind::VZeroBubble) s = squeeze_v_block(s, 2 * K);
  schedules::add_recompute(s);
  return s;
}

}  // namespace

// v-min: about K/3 whole micro-batches' activations per position ((K+4)/3 rounded down).
Schedule make_v_min(int devices, int microbatches, bool r_ops) {
  return make_v_block(ScheduleKind::VMin, devices, microbatches, r_ops);
}
// v-half: half of 1F1B's, (K+2)/2 rounded down.
Schedule make_v_half(int devices, int microbatches, bool r_ops) {
  return make_v_block(ScheduleKind::VHalf, devices, microbatches, r_ops);
}
// v-zb: 1F1B's, K on every position.
Schedule make_v_zb(int devices, int microbatches, bool r_ops) {
  return make_v_block(ScheduleKind::VZeroBubble, devices, microbatches, r_ops);
}

}  // namespace pipescope
