// The table of core/schedule_kinds.h: one record per built-in schedule kind, each fact
// stated once, with where it comes from. Invariant: make_kind_table lists every
// ScheduleKind once, in enum order (schedule_kind indexes it), and each record's
// refusals and in-flight closed form are its generator's (core/schedules/), which the
// property test checks over K 1..8, v 1..4, M 1..16.
#include "core/schedule_kinds.h"

#include <algorithm>

#include "core/error.h"

namespace pipescope {

namespace {

// Closed forms of the peak in-flight count on position d (K positions, v chunks, M
// micro-batches), each from its generator's order:
int alive_all_microbatches(int, int, int v, int M) { return M * v; }  // every F before any B (gpipe, looped-bfs)
// 1F1B (and PipeDream's orders, which are 1F1B's): K-d-1 warm-up forwards, one more before the first B.
int alive_one_f_one_b(int K, int d, int, int M) { return std::min(K - d, M); }
// Megatron's interleaving: 2 (K-d-1) + (v-1) K warm-up forwards, one more before the first B.
int alive_interleaved(int K, int d, int v, int M) { return std::min(2 * (K - d - 1) + (v - 1) * K + 1, M * v); }
// zb-h1 and zb-auto at its default cap: at most min(K, M) alive (1F1B's first stage) on every device.
int alive_first_stage_cap(int K, int, int, int M) { return std::min(K, M); }
// zb-h2: min(2K-1, M) alive on every device.
int alive_zb_h2(int K, int, int, int M) { return std::min(2 * K - 1, M); }
// zb-v: 2K chunk-micro-batches (K whole ones) once M >= 2K-1; fewer micro-batches stop the
// warm-up at M + 1 + d chunks (2M at most).
int alive_zb_v(int K, int d, int, int M) { return std::min({2 * K, M + 1 + d, 2 * M}); }
// dualpipev (M >= 2K): 2K after its warm-up, and each F&B pair starts its F before its B frees.
int alive_dualpipev(int K, int, int, int) { return 2 * K + 1; }
// interleaved-zb: rounds of R = M / max(1, M / K) micro-batches; warm-up (v-1) R + K-1-d
// forwards, then d steady steps whose W waits, then one more F before the first W.
int alive_interleaved_zb(int K, int, int v, int M) {
  const int R = M / std::max(1, M / K);
  return std::min(M * v, (v - 1) * R + K);
}
// v-zb: 1F1B's memory, K whole micro-batches (2K chunks), 2M when M < K.
int alive_v_zb(int K, int, int, int M) { return 2 * std::min(K, M); }

// The table, in enum order.
std::vector<ScheduleKindInfo> make_kind_table() {
  using K = ScheduleKind;
  using C = ChunkRule;
  using MB = MicrobatchRule;
  using WU = WeightUpdate;
  // clang-format off
  return {
  // kind                      name              chunks     several  micro-batches         split  weights        in flight
  {K::GPipe,                   "gpipe",          C::One,    false,   MB::Any,              false, WU::Flush,     alive_all_microbatches},
  {K::OneFOneB,                "1f1b",           C::One,    false,   MB::Any,              false, WU::Flush,     alive_one_f_one_b},
  {K::Interleaved,             "interleaved",    C::Looped, true,    MB::MultipleOfPositions, false, WU::Flush,  alive_interleaved},
  {K::ZeroBubbleH1,            "zb-h1",          C::One,    false,   MB::Any,              true,  WU::Flush,     alive_first_stage_cap},
  {K::ZeroBubbleH2,            "zb-h2",          C::One,    false,   MB::Any,              true,  WU::Flush,     alive_zb_h2},
  {K::ZeroBubbleV,             "zb-v",           C::VShape, false,   MB::Any,              true,  WU::Flush,     alive_zb_v},
  {K::DualPipeV,               "dualpipev",      C::VShape, false,   MB::TwicePositions,   true,  WU::Flush,     alive_dualpipev},
  {K::ZeroBubbleAuto,          "zb-auto",        C::One,    false,   MB::Any,              true,  WU::Flush,     alive_first_stage_cap},
  {K::LoopedBFS,               "looped-bfs",     C::Looped, true,    MB::Any,              false, WU::Flush,     alive_all_microbatches},
  {K::InterleavedZeroBubble,   "interleaved-zb", C::Looped, false,   MB::MultipleOfRounds, true,  WU::Flush,     alive_interleaved_zb},
  {K::VMin,                    "v-min",          C::VShape, false,   MB::Any,              true,  WU::Flush,     nullptr},
  {K::VHalf,                   "v-half",         C::VShape, false,   MB::Any,              true,  WU::Flush,     nullptr},
  {K::VZeroBubble,             "v-zb",           C::VShape, false,   MB::Any,              true,  WU::Flush,     alive_v_zb},
  {K::PipeDream,               "pipedream",      C::One,    false,   MB::Any,              false, WU::Stash,     alive_one_f_one_b},
  {K::PipeDream2BW,            "2bw",            C::One,    false,   MB::Positions,        false, WU::DoubleBuffer, alive_one_f_one_b},
  };
  // clang-format on
}

}  // namespace

// A function-local static: readers at static initialisation (option defaults) find it built.
const std::vector<ScheduleKindInfo>& schedule_kind_table() {
  static const std::vector<ScheduleKindInfo> table = make_kind_table();
  return table;
}

const ScheduleKindInfo& schedule_kind(ScheduleKind kind) {
  const auto i = static_cast<std::size_t>(kind);
  if (i >= schedule_kind_table().size() || schedule_kind_table()[i].kind != kind) throw InputError("unknown schedule kind");
  return schedule_kind_table()[i];
}

std::string to_string(ScheduleKind kind) { return schedule_kind(kind).name; }

ScheduleKind parse_schedule_kind(const std::string& name) {
  for (const ScheduleKindInfo& k : schedule_kind_table()) {
    if (name == k.name) return k.kind;
  }
  throw InputError("unknown schedule \"" + name + "\" (expected " + schedule_kind_names(", ") + ")");
}

const std::vector<ScheduleKind>& schedule_kinds() {
  static const std::vector<ScheduleKind> kinds = [] {
    std::vector<ScheduleKind> out;
    for (const ScheduleKindInfo& k : schedule_kind_table()) out.push_back(k.kind);
    return out;
  }();
  return kinds;
}

std::string schedule_kind_names(const std::string& separator) {
  std::string out;
  for (const ScheduleKindInfo& k : schedule_kind_table()) out += (out.empty() ? "" : separator) + k.name;
  return out;
}

std::string schedule_kind_names(bool (*pick)(const ScheduleKindInfo&)) {
  std::vector<std::string> names;
  for (const ScheduleKindInfo& k : schedule_kind_table()) {
    if (pick(k)) names.push_back(k.name);
  }
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i) out += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i];
  return out;
}

bool asynchronous_kind(const ScheduleKindInfo& kind) { return kind.weight_update != WeightUpdate::Flush; }

std::vector<ScheduleKind> default_search_schedules() {
  std::vector<ScheduleKind> out;
  for (const ScheduleKindInfo& k : schedule_kind_table()) {
    if (!asynchronous_kind(k)) out.push_back(k.kind);
  }
  return out;
}

bool is_asynchronous(ScheduleKind kind) { return asynchronous_kind(schedule_kind(kind)); }

int required_chunks(ScheduleKind kind) {
  switch (schedule_kind(kind).chunks) {
    case ChunkRule::One: return 1;
    case ChunkRule::VShape: return 2;
    case ChunkRule::Looped: return 0;
  }
  return 1;
}

bool v_shaped(ScheduleKind kind) { return schedule_kind(kind).chunks == ChunkRule::VShape; }

bool schedule_takes_chunks(ScheduleKind kind, int v) {
  const ScheduleKindInfo& k = schedule_kind(kind);
  switch (k.chunks) {
    case ChunkRule::One: return v == 1;
    case ChunkRule::VShape: return v == 2;
    case ChunkRule::Looped: return k.several_chunks ? v > 1 : v >= 1;
  }
  return false;
}

std::vector<int> stage_position_map(ScheduleKind kind, int devices, int chunks) {
  std::vector<int> map(static_cast<std::size_t>(devices) * chunks);
  const bool v_shape = v_shaped(kind) && chunks == 2;  // stages d and 2K-1-d on device d
  for (std::size_t st = 0; st < map.size(); ++st) {
    const int s = static_cast<int>(st);
    map[st] = v_shape && s >= devices ? 2 * devices - 1 - s : s % devices;
  }
  return map;
}

std::string microbatch_refusal(ScheduleKind kind, int K, int M, const std::string& k) {
  const std::string got = "; got M = " + std::to_string(M) + ", " + k + " = " + std::to_string(K);
  switch (schedule_kind(kind).microbatches) {
    case MicrobatchRule::Any: return "";
    case MicrobatchRule::MultipleOfPositions:
      if (M % K == 0) return "";
      return "the " + to_string(kind) + " schedule needs M to be a multiple of the number of stages " + k +
             " (Megatron-LM's rule)" + got;
    case MicrobatchRule::MultipleOfRounds: {
      const int rounds = std::max(1, M / K);
      if (M % rounds == 0) return "";
      return to_string(kind) + " needs M to be a multiple of its rounds max(1, M / " + k +
             ") (ScheduleInterleavedZeroBubble's rule)" + got + ", rounds = " + std::to_string(rounds);
    }
    case MicrobatchRule::TwicePositions:
      if (M >= 2 * K) return "";
      return to_string(kind) + " needs at least 2" + k + " = " + std::to_string(2 * K) +
             " micro-batches (M >= 2" + k + ", DualPipe's num_chunks >= num_ranks * 2)" + got;
    case MicrobatchRule::Positions:
      if (M >= K) return "";
      return to_string(kind) + " needs at least as many micro-batches per step as pipeline stages (M >= " + k +
             ", PipeDream-2BW's m >= d, so that two weight versions suffice)" + got;
  }
  return "";
}

}  // namespace pipescope
