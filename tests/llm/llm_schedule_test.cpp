// The layout's pipeline schedule (llm/pipeline_schedule.h): in-flight counts walked on
// the generators' op orders against closed forms and against the simulator's own peak
// accounting, memory per rank for the V-shapes, step_time through the same simulator as
// `pipescope simulate` (zb-v with F = I = W has no bubble, 1F1B (p-1)(F+I+W)), the
// refusals, the search's bound over every torch schedule, and torch's search picking
// zb-v where the zero-bubble schedule has to win.
#include <gtest/gtest.h>

#include <cstdio>
#include <random>
#include <set>
#include <string>

#include "core/error.h"
#include "core/plan.h"
#include "llm/collectives.h"
#include "llm/framework.h"
#include "llm/layout_check.h"
#include "llm/layout_search.h"
#include "llm/memory.h"
#include "llm/pipeline_schedule.h"
#include "llm/step_time.h"
#include "sim/simulator.h"
#include "sim/stage_span.h"
#include "tests/support/test_support.h"
#include "tests/support/source_paths.h"

namespace pipescope {
namespace {

GpuModel h100() { return load_gpu_model(std::string(PIPESCOPE_SOURCE_DIR) + "/profiles/gpus/h100-sxm.json"); }

TransformerShape small(int layers = 8) {
  TransformerShape s;
  s.name = "small";
  s.layers = layers, s.hidden = 2048, s.heads = 16, s.kv_heads = 4, s.ffn_hidden = 8192, s.swiglu = true;
  s.bias_linear = false, s.rms_norm = true, s.tied_embeddings = false, s.vocabulary = 32768, s.sequence = 4096;
  return s;
}

ParallelLayout pipeline(int p, int v, int M, ScheduleKind kind) {
  ParallelLayout l;
  l.p = p, l.v = v, l.microbatches = M, l.schedule = kind;
  return l;
}

std::string where(ScheduleKind k, int p, int v, int M) {
  return to_string(k) + " p=" + std::to_string(p) + " v=" + std::to_string(v) + " M=" + std::to_string(M);
}

// Closed forms of the peak chunk-micro-batches alive on rank r (F started, B or W not ended):
//   gpipe        M: every forward runs before the first backward;
//   1f1b         min(p - r, M): Megatron's p - r - 1 warm-up forwards + 1;
//   interleaved  min(2 (p - r - 1) + (v - 1) p + 1, M v): Megatron's warm-up + 1;
//   looped-bfs   M v: every chunk's forwards before any backward;
//   interleaved-zb (M >= p, rounds R = M / max(1, M / p) micro-batches): (v - 1) R + p on
//                every rank: warm-up (v - 1) R + p - 1 - r forwards, then r steady steps
//                whose W waits (torch's ZB1P), then one more F before the first W;
//   zb-v (M >= 2p - 1)  2p on every rank: 2(p - r) - 1 chunk-0 forwards, r x (F1 F0),
//                then F1 before the first W (1F1B's rank 0: p whole micro-batches);
//   dualpipev (M >= 2p) 2p + 1: 2p after its warm-up, and each F&B pair starts its F
//                before its B frees.
TEST(LlmSchedule, InFlightCountsAreTheClosedForms) {
  using K = ScheduleKind;
  for (int p = 2; p <= 8; ++p) {
    for (int M = 1; M <= 3 * p + 1; ++M) {
      const InFlight gpipe = schedule_in_flight(K::GPipe, p, 1, M);
      const InFlight one = schedule_in_flight(K::OneFOneB, p, 1, M);
      EXPECT_EQ(gpipe.first_chunk, M);
      EXPECT_EQ(gpipe.last_chunk, M);
      EXPECT_EQ(one.last_chunk, 1);  // the last stage runs each B right after its F
      for (int r = 0; r < p; ++r) {
        EXPECT_EQ(gpipe.rank_chunks[r], M) << where(K::GPipe, p, 1, M);
        EXPECT_EQ(one.rank_chunks[r], std::min(p - r, M)) << where(K::OneFOneB, p, 1, M);
        EXPECT_EQ(one.rank_chunks[r], in_flight_chunks(pipeline(p, 1, M, K::OneFOneB), r));  // Megatron's form
      }
      for (int v = 2; v <= 3; ++v) {
        const InFlight bfs = schedule_in_flight(K::LoopedBFS, p, v, M);
        for (int r = 0; r < p; ++r) EXPECT_EQ(bfs.rank_chunks[r], M * v) << where(K::LoopedBFS, p, v, M);
        if (M % p == 0) {
          const InFlight il = schedule_in_flight(K::Interleaved, p, v, M);
          for (int r = 0; r < p; ++r) {
            EXPECT_EQ(il.rank_chunks[r], std::min(2 * (p - r - 1) + (v - 1) * p + 1, M * v)) << where(K::Interleaved, p, v, M);
            EXPECT_EQ(il.rank_chunks[r], in_flight_chunks(pipeline(p, v, M, K::Interleaved), r));
          }
        }
      }
      const int rounds = std::max(1, M / p), R = M / rounds;
      for (int v = 1; v <= 3 && M >= p && M % rounds == 0; ++v) {
        const InFlight zb = schedule_in_flight(K::InterleavedZeroBubble, p, v, M);
        for (int r = 0; r < p; ++r) EXPECT_EQ(zb.rank_chunks[r], (v - 1) * R + p) << where(K::InterleavedZeroBubble, p, v, M);
      }
      if (M >= 2 * p - 1) {
        const InFlight zbv = schedule_in_flight(K::ZeroBubbleV, p, 2, M);
        for (int r = 0; r < p; ++r) EXPECT_EQ(zbv.rank_chunks[r], 2 * p) << where(K::ZeroBubbleV, p, 2, M);
      }
      if (M >= 2 * p) {
        const InFlight dual = schedule_in_flight(K::DualPipeV, p, 2, M);
        for (int r = 0; r < p; ++r) EXPECT_EQ(dual.rank_chunks[r], 2 * p + 1) << where(K::DualPipeV, p, 2, M);
      }
    }
  }
}

// The walk is core/op_rules.h's rule, not a second one: with 1000 bytes per chunk and no
// weight_grad_bytes, the simulator's peak activation bytes on each position are the
// walked count x 1000, for every schedule llm/ times.
TEST(LlmSchedule, InFlightIsTheSimulatorsPeakAccounting) {
  std::mt19937 rng(2811);
  for (int trial = 0; trial < 60; ++trial) {
    const ScheduleKind kind = timed_schedules()[static_cast<std::size_t>(trial) % timed_schedules().size()];
    const int p = 2 + static_cast<int>(rng() % 5), M = 1 + static_cast<int>(rng() % (4 * p));
    const int v = kind == ScheduleKind::ZeroBubbleV || kind == ScheduleKind::DualPipeV ? 2
                  : schedule_takes_chunks(kind, 1)                                    ? 1
                                                                                      : 2 + static_cast<int>(rng() % 2);
    ParallelLayout l = pipeline(p, v, M, kind);
    if (kind == ScheduleKind::InterleavedZeroBubble && rng() % 2 == 0) l.v = 1;
    if (!schedule_refusal(l).empty()) continue;
    const Schedule s = make_schedule({kind, p, M, l.v});
    const StepReport report = simulate(s, testing::chunked_costs(s, 3000, 3000, 3000, 1000 * l.v), Hardware::ideal(p));
    const InFlight f = schedule_in_flight(kind, p, l.v, M);
    for (int r = 0; r < p; ++r) {
      EXPECT_EQ(report.positions[r].peak_activation_bytes, 1000 * f.rank_chunks[r])
          << "trial " << trial << " " << where(kind, p, l.v, M) << " rank " << r;
    }
  }
}

// peak_bytes with W keeping everything (for_weight = held) is the count's rule: 1 byte a
// stage gives rank_chunks back; with W keeping nothing it is 1F1B-like (I frees all), so
// never above the counts; and for the kinds without I (B frees all) for_weight is unused.
TEST(LlmSchedule, PeakBytesWithUnitWeightsAreTheCounts) {
  for (ScheduleKind kind : timed_schedules()) {
    const int p = 4, M = 8;
    const int v = v_shaped(kind) ? 2 : schedule_takes_chunks(kind, 1) ? 1 : 2;
    const InFlight f = schedule_in_flight(kind, p, v, M);
    const std::vector<double> one(static_cast<std::size_t>(p * v), 1.0), none(one.size(), 0.0);
    const std::vector<double> whole = peak_bytes(f, one, one), freed = peak_bytes(f, one, none);
    for (int r = 0; r < p; ++r) {
      EXPECT_EQ(whole[r], f.rank_chunks[r]) << where(kind, p, v, M) << " rank " << r;
      EXPECT_LE(freed[r], f.rank_chunks[r]) << where(kind, p, v, M) << " rank " << r;
      if (!make_schedule({kind, p, M, v}).has_split_backward()) {
        EXPECT_EQ(freed[r], whole[r]);
      }
    }
  }
}

// The strongest check of llm/'s memory: llm_pipeline's Profile states each layer's stash
// (activation_bytes, weight_grad_bytes: llm/memory.h's), and the core simulator on it
// (simulate(schedule_for(plan), build_cost_model(profile, plan, hw), hw), core/op_rules.h's
// rule) peaks on every position at llm_memory's activation bytes, for random layouts of
// every non-Megatron schedule torch runs (gpipe, looped-bfs, interleaved-zb, zb-v,
// dualpipev), within 1 byte per layer of the chunk-micro-batches alive (the Profile rounds
// each layer's bytes to an integer; llm/ keeps doubles). Two differences, stated: under full
// recompute llm_memory adds the one layer being recomputed (the simulator's plan has no R
// ops: layer_time folds the recompute into the backward's time), and for 1f1b / interleaved
// llm_memory keeps Megatron's closed form (held by the Megatron oracle), where the
// simulator matches peak_bytes, the walk. The bytes never move the time: the same step
// with every byte count zeroed.
TEST(LlmSchedule, SimulatorPeakIsLlmMemoryOnTheLlmPipelineProfile) {
  const GpuModel gpu = h100();
  std::mt19937 rng(7103);
  int checked = 0, split = 0;
  for (int trial = 0; trial < 300 && checked < 60; ++trial) {
    const ScheduleKind kind = timed_schedules()[rng() % timed_schedules().size()];
    const int p = 2 + static_cast<int>(rng() % 4);
    int v = v_shaped(kind) ? 2 : schedule_takes_chunks(kind, 1) ? 1 : 2 + static_cast<int>(rng() % 2);
    if (kind == ScheduleKind::InterleavedZeroBubble) v = 1 + static_cast<int>(rng() % 2);
    const TransformerShape s = small(p * v * (1 + static_cast<int>(rng() % 2)));
    ParallelLayout l = pipeline(p, v, 1 + static_cast<int>(rng() % (4 * p)), kind);
    l.t = 1 << (rng() % 3), l.sequence_parallel = l.t > 1;
    l.micro_batch = 1 << (rng() % 2), l.recompute = static_cast<Recompute>(rng() % 3);
    try {
      l = validate_layout(s, l, l.gpus());
    } catch (const InputError&) {
      continue;
    }
    const LlmPipeline pipe = llm_pipeline(s, l, gpu);
    const Hardware hw = pipeline_hardware(gpu, l);
    const Schedule schedule = schedule_for(pipe.plan);
    SimOptions so;
    so.record_timeline = false;
    so.p2p = P2p::Blocking;
    const StepReport report = simulate(schedule, build_cost_model(pipe.profile, pipe.plan, hw), hw, so);
    const LlmMemory m = llm_memory(s, l);
    const InFlight f = schedule_in_flight(kind, p, l.v, l.microbatches);
    std::vector<double> held, for_weight;
    for (const StashBytes& c : chunk_stash_bytes(s, l)) held.push_back(c.held), for_weight.push_back(c.for_weight);
    const std::vector<double> walked = peak_bytes(f, held, for_weight);
    const bool megatron = kind == ScheduleKind::OneFOneB || kind == ScheduleKind::Interleaved;
    ParallelLayout kept = l;
    kept.recompute = Recompute::None;
    const double recomputed_layer = layer_activation_bytes(s, kept);
    for (int r = 0; r < p; ++r) {
      const RankMemory& st = m.stages[static_cast<std::size_t>(r)];
      const double recomputed = l.recompute == Recompute::Full && st.layers > 0 ? recomputed_layer : 0.0;
      const double sim = static_cast<double>(report.positions[r].peak_activation_bytes);
      const double slack = (st.layers + 2.0) * f.rank_chunks[r];
      const std::string at = "seed 7103 trial " + std::to_string(trial) + " " + layout_summary(l) + " rank " +
                             std::to_string(r);
      EXPECT_NEAR(sim, walked[r], slack) << at;
      if (!megatron) {
        EXPECT_NEAR(sim + recomputed, st.activation_bytes, slack) << at;
      }
    }
    Profile zero = pipe.profile;
    for (LayerProfile& layer : zero.layers) layer.activation_bytes = {0}, layer.weight_grad_bytes = {0};
    EXPECT_EQ(simulate(schedule, build_cost_model(zero, pipe.plan, hw), hw, so).step_ns, report.step_ns)
        << layout_summary(l);
    ++checked;
    split += schedule.has_split_backward() ? 1 : 0;
  }
  EXPECT_GE(checked, 60);
  EXPECT_GE(split, 15);  // the split-backward kinds, where I frees what W does not need
}

// A V holds chunks r and 2p-1-r on rank r: the head sits on rank 0 beside the embedding,
// and every rank keeps 2p chunk-micro-batches, p whole micro-batches (1F1B's rank 0).
TEST(LlmSchedule, VShapeMemoryHoldsTheHeadOnRankZero) {
  const TransformerShape s = small(16);
  const ParallelLayout l = validate_layout(s, pipeline(4, 2, 8, ScheduleKind::ZeroBubbleV), 4);
  const LlmMemory m = llm_memory(s, l);
  ASSERT_EQ(m.stages.size(), 4U);
  EXPECT_TRUE(m.stages[0].embedding);
  EXPECT_TRUE(m.stages[0].head);
  for (const RankMemory& r : m.stages) {
    EXPECT_EQ(r.layers, 4);  // 16 layers in 8 chunks of 2, two chunks per rank
    EXPECT_DOUBLE_EQ(r.in_flight, 4.0) << r.rank;
    if (r.rank > 0) {
      EXPECT_FALSE(r.head);
    }
  }
  // Rank 1 peaks with 8 whole chunk-micro-batches of 2 layers before its first I.
  EXPECT_DOUBLE_EQ(m.stages[1].activation_bytes, 4.0 * 4 * layer_activation_bytes(s, l));
  // Rank 0 (embedding and head beside its layers): the byte walk, below the old sum of
  // separate peaks (chunk 0's embeddings, the last chunk's heads) since I frees part of each.
  const InFlight walked = schedule_in_flight(ScheduleKind::ZeroBubbleV, 4, 2, 8);
  std::vector<double> held, for_weight;
  for (const StashBytes& c : chunk_stash_bytes(s, l)) held.push_back(c.held), for_weight.push_back(c.for_weight);
  EXPECT_DOUBLE_EQ(m.stages[0].activation_bytes, peak_bytes(walked, held, for_weight)[0]);
  EXPECT_LT(m.stages[0].activation_bytes, 4.0 * 4 * layer_activation_bytes(s, l) +
                                              walked.first_chunk * embedding_activation_bytes(s, l) +
                                              walked.last_chunk * head_activation_bytes(s, l));
  // GPipe keeps every micro-batch: M = 8 on every rank.
  const ParallelLayout g = validate_layout(s, pipeline(4, 1, 8, ScheduleKind::GPipe), 4);
  for (const RankMemory& r : llm_memory(s, g).stages) EXPECT_DOUBLE_EQ(r.in_flight, 8.0) << r.rank;
  EXPECT_TRUE(llm_memory(s, g).stages[3].head);
}

// step_time is the core simulator on llm_pipeline's Profile and Plan: the same number as
// simulate(schedule_for(plan), build_cost_model(...)), with I and W as separate ops and
// the V's placement; and on that Profile with F = I = W per layer and nothing to send,
// zb-v's busiest rank has no idle time at all (Qi et al.'s zero bubble), 1F1B's
// (p - 1)(F + I + W) of a rank's whole-stage times.
TEST(LlmSchedule, ZbvStepIsTheCoreSimulationAndHasNoBubbleWhenFEqualsIEqualsW) {
  const GpuModel gpu = h100();
  const TransformerShape s = small(16);
  const int p = 4, M = 8;
  const ParallelLayout l = validate_layout(s, pipeline(p, 2, M, ScheduleKind::ZeroBubbleV), p);
  const LlmPipeline pipe = llm_pipeline(s, l, gpu);
  ASSERT_EQ(pipe.plan.schedule, ScheduleKind::ZeroBubbleV);
  for (int c = 0; c < 2 * p; ++c) EXPECT_EQ(pipe.plan.stages[c].devices.front(), c < p ? c : 2 * p - 1 - c) << c;
  const Schedule schedule = schedule_for(pipe.plan);
  EXPECT_TRUE(schedule.has_split_backward());
  const Hardware hw = pipeline_hardware(gpu, l);
  SimOptions so;
  so.record_timeline = false;
  so.p2p = P2p::Blocking;
  const StepReport core = simulate(schedule, build_cost_model(pipe.profile, pipe.plan, hw), hw, so);
  const StepTime st = step_time(s, l, gpu);
  EXPECT_EQ(st.pipeline_ns, core.step_ns);
  EXPECT_EQ(st.schedule, "zb-v");
  EXPECT_EQ(st.embedding_sync_ns, 0);  // untied here; and a V keeps both ends on rank 0

  // F = I = W = 1 ms per transformer layer, embedding and head free, nothing sent.
  Profile unit = pipe.profile;
  for (LayerProfile& layer : unit.layers) {
    const bool block = layer.name.rfind("layers.", 0) == 0;
    const double t = block ? 1.0 : 0.0;
    layer.forward_ms = {t}, layer.backward_input_ms = {t}, layer.backward_weight_ms = {t}, layer.backward_ms = {2 * t};
    layer.output_bytes = {0}, layer.optimizer_ms = 0;
  }
  const Hardware ideal = Hardware::ideal(p);
  const int64_t rank_ms = 2 * 2 * 3;  // two chunks of 2 layers, F + I + W each, per micro-batch
  const StepReport zbv = simulate(schedule, build_cost_model(unit, pipe.plan, ideal), ideal);
  EXPECT_EQ(longest_span(zbv), M * rank_ms * 1'000'000);
  Plan one = pipe.plan;
  one.schedule = ScheduleKind::OneFOneB, one.chunks = 1, one.stages.clear();
  for (int r = 0, first = 0; r < p; ++r) {  // the same layers, 4 per rank, one stage each
    const int end = first + 4 + (r == 0 ? 1 : 0) + (r == p - 1 ? 1 : 0);
    one.stages.push_back({first, end, {r}});
    first = end;
  }
  const StepReport onef = simulate(schedule_for(one), build_cost_model(unit, one, ideal), ideal);
  EXPECT_EQ(longest_span(onef), (M + p - 1) * rank_ms * 1'000'000);
}

TEST(LlmSchedule, LayoutsASchedulesGeneratorRefusesNameTheField) {
  const TransformerShape s = small(16);
  auto refused = [&](const ParallelLayout& l) {
    try {
      validate_layout(s, l, l.p);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(refused(pipeline(4, 4, 8, ScheduleKind::ZeroBubbleV)).find("schedule: zb-v runs exactly 2 chunks"),
            std::string::npos);
  EXPECT_NE(refused(pipeline(4, 2, 7, ScheduleKind::DualPipeV)).find("--global-batch-size: dualpipev needs at least 2p = 8"),
            std::string::npos);
  EXPECT_NE(refused(pipeline(4, 2, 6, ScheduleKind::Interleaved)).find("--global-batch-size: the interleaved schedule"),
            std::string::npos);
  EXPECT_NE(refused(pipeline(4, 2, 9, ScheduleKind::InterleavedZeroBubble)).find("interleaved-zb needs"), std::string::npos);
  EXPECT_NE(refused(pipeline(4, 1, 8, ScheduleKind::ZeroBubbleH1)).find("schedule: llm/ times gpipe, 1f1b"),
            std::string::npos);
  EXPECT_NE(refused(pipeline(4, 2, 8, ScheduleKind::GPipe)).find("schedule: gpipe runs 1 chunk per rank"),
            std::string::npos);
  EXPECT_EQ(refused(pipeline(4, 2, 8, ScheduleKind::ZeroBubbleV)), "accepted");
  // The framework's offer: Megatron runs no zb-v (named with what it runs).
  EXPECT_EQ(schedule_offer_refusal(framework_offer(Framework::Megatron), ScheduleKind::ZeroBubbleV),
            "--schedule: zb-v is not a schedule Megatron-LM runs (it runs 1f1b, interleaved)");
  EXPECT_EQ(schedule_offer_refusal(framework_offer(Framework::Torch), ScheduleKind::ZeroBubbleV), "");
  // torch's Schedule1F1B raises for M < p; Megatron's 1F1B runs min(p - r - 1, M) warm-ups.
  EXPECT_NE(runtime_refusal(framework_offer(Framework::Torch), pipeline(4, 1, 3, ScheduleKind::OneFOneB))
                .find("torch's Schedule1F1B needs at least p = 4"),
            std::string::npos);
  EXPECT_EQ(runtime_refusal(framework_offer(Framework::Megatron), pipeline(4, 1, 3, ScheduleKind::OneFOneB)), "");
  EXPECT_EQ(runtime_refusal(framework_offer(Framework::Torch), pipeline(4, 1, 3, ScheduleKind::GPipe)), "");
}

// The bound stays below the exact step for every schedule torch runs, over random
// layouts (p, v, M, b, recompute, sharding, d): the zero-bubble kinds drop the drain.
TEST(LlmSchedule, BoundNeverExceedsTheStepForEverySchedule) {
  const GpuModel gpu = h100();
  std::mt19937 rng(4242);
  int checked = 0;
  for (int trial = 0; trial < 400 && checked < 150; ++trial) {
    const ScheduleKind kind = timed_schedules()[rng() % timed_schedules().size()];
    const int p = 2 << (rng() % 3), d = 1 << (rng() % 3);
    int v = kind == ScheduleKind::ZeroBubbleV || kind == ScheduleKind::DualPipeV ? 2 : schedule_takes_chunks(kind, 1) ? 1 : 2;
    if (kind == ScheduleKind::InterleavedZeroBubble) v = 1 + static_cast<int>(rng() % 2);
    TransformerShape s = small(p * v * (1 + static_cast<int>(rng() % 2)));
    ParallelLayout l = pipeline(p, v, 1 + static_cast<int>(rng() % (4 * p)), kind);
    l.d = d, l.micro_batch = 1 << (rng() % 2), l.recompute = static_cast<Recompute>(rng() % 3);
    l.sharding = d > 1 ? static_cast<Sharding>(rng() % 4) : Sharding::None;
    try {
      l = validate_layout(s, l, l.gpus());
    } catch (const InputError&) {
      continue;
    }
    const LlmCandidate c = time_layout(s, l, gpu, {});
    ASSERT_LE(c.bound_ns, c.step_ns) << "seed 4242 trial " << trial << ": " << layout_summary(l);
    ++checked;
  }
  EXPECT_GE(checked, 150);
}

// Every layout torch's exhaustive search times is one torch runs: a schedule of its table,
// accepted by its generator (schedule_refusal) and by torch's constructor (runtime_refusal:
// no 1f1b with M < p), with every schedule of the table reached on some layout.
TEST(LlmSchedule, TorchSearchTimesOnlyWhatTorchRuns) {
  LlmSearchRequest q;
  q.shape = small(8), q.gpus = 8, q.global_batch = 8, q.framework = Framework::Torch;
  q.exhaustive = true, q.top = 1 << 20;
  const LlmSearchResult r = search_layouts(q, h100());
  const FrameworkOffer& torch = framework_offer(Framework::Torch);
  std::set<std::string> seen;
  for (const LlmCandidate& c : r.best) {
    EXPECT_TRUE(torch.runs(layout_schedule(c.layout))) << layout_summary(c.layout);
    EXPECT_EQ(schedule_refusal(c.layout), "") << layout_summary(c.layout);
    EXPECT_EQ(runtime_refusal(torch, c.layout), "") << layout_summary(c.layout);
    seen.insert(c.schedule);
  }
  EXPECT_EQ(seen.size(), 7U);  // gpipe, 1f1b, interleaved, looped-bfs, interleaved-zb, zb-v, dualpipev
}

// Why zb-v must win here: 8 layers whose F, I and W are each about one GEMM pass (layer_time:
// I and W each redo the forward's GEMMs once), 4 ranks pinned (t 1, cp 1, p 4, b 1) and
// only M = 8 micro-batches, memory to spare: 1F1B and gpipe idle (p - 1)/(M + p - 1) = 3/11
// of the step (their bounds alone exceed zb-v's step), interleaved and looped-bfs (v = 2)
// about half of that, while zb-v fills its warm-up and drain with W (no bubble at all when
// F = I = W and nothing is sent; here the blocking p2p and the embedding and head on rank 0
// leave some). dualpipev's F&B pairs are not overlapped by llm/ (no fb_overlap times), so
// its bubble (p-1) max(F - W, (F + B - W)/2) stays above zb-v's (p-1)(B - W); interleaved-zb's
// ZB1P keeps a (p-1)(F + B - W) / v fill. Measured at this commit: zb-v 0.132 s, dualpipev
// +1.1%, interleaved-zb +5.9%, interleaved +9.2%.
TEST(LlmSchedule, TorchSearchPicksZbvWhereZeroBubbleWins) {
  LlmSearchRequest q;
  q.shape = small(8), q.gpus = 4, q.global_batch = 8, q.framework = Framework::Torch;
  q.t = 1, q.cp = 1, q.p = 4, q.micro_batch = 1;
  const LlmSearchResult r = search_layouts(q, h100());
  ASSERT_FALSE(r.best.empty());
  EXPECT_EQ(r.best.front().schedule, "zb-v") << layout_summary(r.best.front().layout);
  const auto& dims = r.dimensions.at("schedule");
  const int64_t zbv = dims.at(static_cast<int>(ScheduleKind::ZeroBubbleV)).best_step;
  const DimensionValue& one = dims.at(static_cast<int>(ScheduleKind::OneFOneB));
  EXPECT_TRUE(one.best_step < 0 || one.best_step > zbv);  // simulated and slower, or its bound already above
  EXPECT_GT(one.best_bound, 0);
  bool said = false;
  for (const std::string& w : r.why) {
    said = said || w.rfind("schedule = zb-v", 0) == 0;
  }
  EXPECT_TRUE(said) << "no schedule line in why";
  // Megatron's search over the same request never offers it.
  q.framework = Framework::Megatron;
  for (const LlmCandidate& c : search_layouts(q, h100()).best) {
    EXPECT_TRUE(c.schedule == "1f1b" || c.schedule == "interleaved") << c.schedule;
  }
  q.schedule = ScheduleKind::ZeroBubbleV;
  try {
    search_layouts(q, h100());
    ADD_FAILURE() << "megatron --schedule zb-v accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("Megatron-LM"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace pipescope
