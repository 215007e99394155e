// The schedule kinds' records (core/schedule_kinds.h) against their generators, over
// every kind and K 1..8, v 1..4, M 1..16: a record refuses (K, v, M) exactly when
// make_schedule + validate_schedule does; its stage placement, split backward and weight
// update are the built schedule's; its in-flight closed form is the count walked on the
// generator's op order (F starts a chunk-micro-batch, B or W ends it), position by
// position; and every name round-trips.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>

#include "core/error.h"
#include "core/schedule.h"
#include "core/schedule_kinds.h"

namespace pipescope {
namespace {

std::string where(ScheduleKind k, int K, int v, int M) {
  return to_string(k) + " K=" + std::to_string(K) + " v=" + std::to_string(v) + " M=" + std::to_string(M);
}

// Whether the record refuses (K, v, M): its chunk rule, then its micro-batch rule.
bool record_refuses(const ScheduleKindInfo& k, int K, int v, int M) {
  const bool chunks_ok = k.chunks == ChunkRule::One ? v == 1 : k.chunks == ChunkRule::VShape ? v == 2 : v >= 1;
  return !chunks_ok || !microbatch_refusal(k.kind, K, M).empty();
}

// Peak chunk-micro-batches alive per position on the op lists.
std::vector<int> walked_in_flight(const Schedule& s) {
  std::vector<int> out;
  for (const std::vector<Op>& ops : s.position_ops) {
    int alive = 0, peak = 0;
    for (const Op& op : ops) {
      if (op.kind == OpKind::Forward) peak = std::max(peak, ++alive);
      if (op.kind == OpKind::Backward || op.kind == OpKind::BackwardWeight) --alive;
    }
    out.push_back(peak);
  }
  return out;
}

TEST(ScheduleKinds, RecordsAreTheGenerators) {
  int built = 0, counted = 0;
  std::set<std::string> refused_by_m;  // the kinds some M refuses on a chunk count they take
  for (const ScheduleKindInfo& k : schedule_kind_table()) {
    for (int K = 1; K <= 8; ++K) {
      for (int v = 1; v <= 4; ++v) {
        for (int M = 1; M <= 16; ++M) {
          const std::string at = where(k.kind, K, v, M);
          Schedule s;
          bool builds = true;
          try {
            s = make_schedule({k.kind, K, M, v});
            validate_schedule(s);
          } catch (const InputError& e) {
            builds = false;
            if (!record_refuses(k, K, v, M)) ADD_FAILURE() << at << ": the generator refuses: " << e.what();
          }
          ASSERT_EQ(builds, !record_refuses(k, K, v, M)) << at;
          if (!builds) {
            if (required_chunks(k.kind) == 0 || v == required_chunks(k.kind)) refused_by_m.insert(k.name);
            continue;
          }
          ++built;
          EXPECT_EQ(s.stage_position, stage_position_map(k.kind, K, v)) << at;
          for (int st = 0; st < K * v; ++st) {  // V: stages d and 2K-1-d on d; else stage c K + d on d
            EXPECT_EQ(s.stage_position[st], v_shaped(k.kind) && st >= K ? 2 * K - 1 - st : st % K) << at;
          }
          EXPECT_EQ(s.has_split_backward(), k.split_backward) << at;
          EXPECT_EQ(s.weight_update, k.weight_update) << at;
          if (k.in_flight == nullptr) continue;
          const std::vector<int> walked = walked_in_flight(s);
          for (int d = 0; d < K; ++d) EXPECT_EQ(walked[d], k.in_flight(K, d, v, M)) << at << " position " << d;
          ++counted;
        }
      }
    }
  }
  // Every kind builds M = 1..16 on K = 1..8 at its own chunk count (1, 2, or each of
  // 1..4) except where its M rule refuses; these four kinds have one, and only they.
  EXPECT_EQ(refused_by_m, (std::set<std::string>{"interleaved", "dualpipev", "interleaved-zb", "2bw"}));
  // Built, of 128 (K, M) per chunk count: gpipe, 1f1b, zb-h1, zb-h2, zb-auto, pipedream
  // all (6 x 128); 2bw M >= K (16 + 15 + ... + 9 = 100); zb-v, v-min, v-half, v-zb all
  // (4 x 128); dualpipev M >= 2K (15 + 13 + ... + 1 = 64); looped-bfs every v (4 x 128);
  // interleaved M a multiple of K (16 + 8 + 5 + 4 + 3 + 2 + 2 + 2 = 42 per v, 168);
  // interleaved-zb M a multiple of max(1, M / K) (106 per v, 424).
  EXPECT_EQ(built, 6 * 128 + 100 + 4 * 128 + 64 + 4 * 128 + 168 + 424);
  // v-min and v-half have no closed form per position (the walk is their count).
  EXPECT_EQ(counted, built - 2 * 128);
}

// Records in enum order (schedule_kind indexes the table), unique names, each name read
// back as its kind, and an unknown name refused with every name listed.
TEST(ScheduleKinds, NamesRoundTrip) {
  const std::vector<ScheduleKindInfo>& table = schedule_kind_table();
  ASSERT_EQ(table.size(), 15U);  // gpipe .. 2bw: the enum's 15 kinds
  std::set<std::string> names;
  for (std::size_t i = 0; i < table.size(); ++i) {
    EXPECT_EQ(static_cast<std::size_t>(table[i].kind), i);
    EXPECT_EQ(parse_schedule_kind(table[i].name), table[i].kind);
    EXPECT_EQ(to_string(table[i].kind), table[i].name);
    EXPECT_EQ(schedule_kinds()[i], table[i].kind);
    names.insert(table[i].name);
  }
  EXPECT_EQ(names.size(), table.size());
  try {
    parse_schedule_kind("zb-x");
    ADD_FAILURE() << "zb-x accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("(expected " + schedule_kind_names(", ") + ")"), std::string::npos) << e.what();
  }
  EXPECT_EQ(schedule_kind_names(asynchronous_kind), "pipedream and 2bw");
  EXPECT_EQ(default_search_schedules().size(), 13U);  // every kind but the two asynchronous ones
}

// The refusals' words name the rule and its numbers, in core's K or llm/'s p.
TEST(ScheduleKinds, MicrobatchRefusalsNameTheRule) {
  EXPECT_EQ(microbatch_refusal(ScheduleKind::Interleaved, 4, 6),
            "the interleaved schedule needs M to be a multiple of the number of stages K (Megatron-LM's rule); "
            "got M = 6, K = 4");
  EXPECT_EQ(microbatch_refusal(ScheduleKind::DualPipeV, 4, 7, "p"),
            "dualpipev needs at least 2p = 8 micro-batches (M >= 2p, DualPipe's num_chunks >= num_ranks * 2); "
            "got M = 7, p = 4");
  EXPECT_EQ(microbatch_refusal(ScheduleKind::InterleavedZeroBubble, 4, 9),
            "interleaved-zb needs M to be a multiple of its rounds max(1, M / K) (ScheduleInterleavedZeroBubble's "
            "rule); got M = 9, K = 4, rounds = 2");
  EXPECT_EQ(microbatch_refusal(ScheduleKind::PipeDream2BW, 4, 3).find("2bw needs at least as many micro-batches"), 0U);
  EXPECT_EQ(microbatch_refusal(ScheduleKind::InterleavedZeroBubble, 4, 8), "");  // 2 rounds of 4
  EXPECT_EQ(microbatch_refusal(ScheduleKind::OneFOneB, 4, 1), "");
}

}  // namespace
}  // namespace pipescope
