// Megatron-LM's interleaved 1F1B (Narayanan et al., SC 2021): v model chunks per
// device, stage c K + d on device d.
// Invariant: every device runs M v forwards and M v backwards, chunks in round-robin
// groups of K micro-batches, backwards in the reverse chunk order.
#include <algorithm>

#include "core/error.h"
#include "core/schedule.h"
#include "core/schedules/builder.h"

namespace pipescope {

using schedules::add_recompute;
using schedules::empty_schedule;

// Megatron-LM's interleaved 1F1B: the k-th forward on a device runs model chunk
// (k mod Kv) / K on micro-batch (k / Kv) K + k mod K; backwards visit chunks in
// reverse. Warm-up is 2 (K - d - 1) + (v - 1) K forwards, at most all of them: Megatron-Core
// 0.16's get_pp_rank_microbatches and torch 2.13's ScheduleInterleaved1F1B (older
// Megatron-LM ran every forward first when M = K; both frameworks dropped that).
Schedule make_interleaved(int devices, int microbatches, int chunks, bool r_ops) {
  ScheduleSpec spec{ScheduleKind::Interleaved, devices, microbatches, chunks, r_ops};
  check_schedule_spec(spec);  // M a multiple of K (Megatron-LM's rule: core/schedule_kinds.h)
  Schedule s = empty_schedule(spec);
  const int K = devices, v = chunks, total = microbatches * chunks;
  auto op_at = [&](int d, int k, bool forward) {
    int in_group = k % (K * v);
    int chunk = in_group / K;
    if (!forward) chunk = v - 1 - chunk;
    int mb = (k / (K * v)) * K + k % K;
    return Op{forward ? OpKind::Forward : OpKind::Backward, chunk * K + d, mb};
  };
  for (int d = 0; d < K; ++d) {
    auto& ops = s.position_ops[d];
    ops.reserve(2 * static_cast<std::size_t>(total));
    int warmup = std::min((K - d - 1) * 2 + (v - 1) * K, total);
    int f = 0, b = 0;
    for (; f < warmup; ++f) ops.push_back(op_at(d, f, true));
    while (f < total) {
      ops.push_back(op_at(d, f++, true));
      ops.push_back(op_at(d, b++, false));
    }
    while (b < total) ops.push_back(op_at(d, b++, false));
  }
  add_recompute(s);
  return s;
}

}  // namespace pipescope
