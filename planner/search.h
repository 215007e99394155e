// The plan search: enumerate candidates (stages K with replication r = D / K, micro-
// batches M dividing N, schedule and chunks, re-materialisation), partition each,
// simulate each, keep those that fit in device memory and rank them by throughput.
// Results are stored by enumeration index, so they are the same whatever the number
// of threads; ties in step time go to the smaller peak memory, then to the earlier
// candidate.
//   SearchRequest q{.profile = p, .hardware = h, .devices = 8, .batch = 256};
//   SearchResult r = search_plans(q);
//   const Candidate& best = winner(r);     // throws InputError when nothing fits
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/hardware.h"
#include "core/json_reader.h"
#include "core/plan.h"
#include "core/profile.h"
#include "core/recompute.h"
#include "core/runtime_costs.h"
#include "core/schedule.h"
#include "planner/partitioner.h"
#include "sim/distribution.h"

namespace pipescope {

// What the search ranks by: the deterministic step, or the mean / median / 99th
// percentile of the step under jitter (SearchRequest::jitter, sim/distribution.h).
enum class Objective { Step, Mean, P50, P99 };
Objective parse_objective(const std::string& text);  // step | mean | p50 | p99
std::string to_string(Objective objective);

// The recomputes the search tries (core/recompute.h; a profile's plans run none or full):
// auto = none and full, none (or off), full (or on); selective is refused by name.
std::vector<Recompute> parse_recompute_choices(const std::string& text);

// The most micro-batches M a search tries: a batch N's divisors above it are skipped
// (`simulate -M` takes up to 5 x 10^7 ops), so a search of N up to kMaxBatch
// (core/limits.h) ends in about a second per thousand candidates.
inline constexpr int64_t kMaxSearchMicrobatches = 4096;

struct SearchRequest {
  Profile profile;               // any layer order; the search orders it topologically
  std::string profile_path;      // written into plans
  Hardware hardware;
  int devices = 1;               // D
  int64_t batch = 1;             // N, samples per step
  std::vector<ScheduleKind> schedules = default_search_schedules();  // every built-in
  int max_stages = 0;            // 0: up to min(D, L)
  int stages = 0;                // pins K (Megatron's --pipeline-model-parallel-size); 0: K searched
  std::vector<Recompute> recomputes = {Recompute::None, Recompute::Full};  // tried in this order
  std::vector<int> interleaved_chunks = {2, 4};
  PartitionKind partition = PartitionKind::Optimal;  // parsed at the edges (parse_partition_kind)
  // Hardware whose `speed`s differ: each candidate with K >= 2 is placed on the listed
  // devices, or sorted fastest first or slowest first (replicas of a position then get
  // devices of like speed), whichever gives the fastest slowest stage.
  bool place_by_speed = true;
  // Plain schedules with r >= 2: also try a different replica count per position
  // (planner/stage_replication.h); kept when its simulated step is faster.
  bool per_stage_replication = true;
  // Interleaved candidates whose time-only cut does not fit: cut again with each stage's
  // own peak capped at a share of the device memory (search.cpp, interleaved_fit).
  bool memory_aware_interleaving = true;
  double optimizer_state_factor = kDefaultOptimizerStateFactor;
  // Where flushed candidates' steps end (core/plan.h). Post-validation: each is simulated
  // over kAsyncEvaluationSteps steps and ranked by its steady-state step, and every
  // zb-auto order is searched (the pruning bounds are for a step from time 0).
  OptimizerStep optimizer_step = OptimizerStep::Synchronized;
  // How transfers meet compute (core/p2p.h): written into every candidate's plan; absent:
  // the hardware's, else overlapped.
  std::optional<P2p> p2p;
  // What the runtime spends around the ops (core/runtime_costs.h), charged in every
  // candidate's simulation; absent: the ops alone.
  std::optional<RuntimeCosts> runtime;
  // Activation offload (core/offload.h): written into every candidate's plan and simulated
  // with it (one fraction for every stage: candidates differ in their stage counts).
  Offload offload;
  // With offload none and a host_link in the hardware file: a candidate that does not fit
  // is simulated again with selective, then all offload (offload's fraction, or every
  // byte), and takes the first that fits (candidate_evaluation.h: consider_offload).
  bool consider_offload = true;
  int threads = 0;               // 0: one per core
  Objective objective = Objective::Step;
  JitterSpec jitter;             // samples each fitting candidate unless objective is Step
  bool jitter_from_profile = false;  // per-stage CV from the profile's measured spread
  // zb-auto's order is searched (planner/zero_bubble_search.h) only for candidates whose
  // step's lower bound could still place them among the first `exact_top` of the
  // ranking; the others are marked pruned (Candidate::pruned). 0: search every zb-auto
  // candidate (sweep, the GUI); `plan` asks for max(10, --top). Objective::Step only (a
  // jittered statistic has no such bound).
  int exact_top = 0;
};

struct Candidate {
  int index = 0;                 // enumeration order
  int stages = 1;                // K
  int replicas = 1;              // r per position (K r = D)
  int microbatches = 1;          // M
  ScheduleKind schedule = ScheduleKind::OneFOneB;
  int chunks = 1;
  Recompute recompute = Recompute::None;  // None or Full
  // Device placement: slot k of the pipeline (position p holds slots [p r, (p + 1) r))
  // runs on hardware device device_order[k]; empty: device k.
  std::vector<int> device_order;
  std::string placement;         // "" (listed order), "fastest-first", "slowest-first"
  std::vector<int> stage_replicas;  // per position when they differ (sum <= D); empty: r each
  // Filled by the evaluation.
  // zb-auto: the largest cap that fits (plan.max_inflight); 0: searched under the byte
  // budget the hardware's memory leaves (zero_bubble_limits), label " budget=memory".
  int max_inflight = 0;
  Plan plan;
  // Graph profiles: the layer order the plan's ranges refer to (indices into the search's
  // topologically ordered profile), when the downset partitioner's stages are not
  // contiguous in it; empty: that order itself. See reordered_profile().
  std::vector<int> layer_order;
  int64_t step_ns = 0;
  double throughput_samples_per_s = 0;
  double bubble_fraction = 0;
  int64_t slowest_stage_ns = 0;  // busiest device's time per micro-batch (partitioner's model)
  std::vector<int64_t> stage_peak_bytes;  // per pipeline position, simulated
  std::vector<int64_t> stage_host_peak_bytes;  // activation offload: per position, the host peak (fits counts it)
  int64_t peak_bytes = 0;
  bool fits = false;
  // zb-auto: a lower bound of its step (in step_ns; search.cpp, evaluate) could not
  // reach the first SearchRequest::exact_top, so its order was not searched; not
  // simulated, not ranked, fits stays false.
  bool pruned = false;
  // consider_offload's runs when memory bound this candidate: none first, then selective
  // and all, each with its step and per-position peaks; offload_chosen when the plan
  // took one of them (plan.offload says which).
  struct OffloadTrial {
    OffloadPolicy policy = OffloadPolicy::None;
    int64_t step_ns = 0;
    std::vector<int64_t> stage_peak_bytes;  // per position
    bool fits = false;
  };
  std::vector<OffloadTrial> offload_trials;
  bool offload_chosen = false;
  bool pareto = false;           // on the throughput / peak-memory front of fitting plans
  int rank = 0;                  // 1 = winner; 0 = does not fit
  // What the ranking compares: step_ns, or the objective's statistic of the sampled
  // steps (fitting candidates only, when the objective is not Step).
  int64_t objective_ns = 0;
  bool sampled = false;
  double mean_ns = 0;
  int64_t p50_ns = 0, p99_ns = 0;

  double microbatch_size(int64_t batch) const { return static_cast<double>(batch) / microbatches; }
  std::string label() const;     // "1f1b K=4 r=2 M=32 recompute"
};

struct SearchResult {
  std::vector<Candidate> candidates;  // enumeration order
  std::vector<int> ranking;           // indices of fitting candidates, best first
  int64_t memory_limit_bytes = 0;
  int threads = 1;
  Objective objective = Objective::Step;
  int samples = 0;                    // per fitting candidate, when sampled
  int deterministic_winner = -1;      // the best fitting candidate by step_ns alone
  int exact_top = 0;                  // the request's (0: no zb-auto candidate pruned)
};

using ProgressFn = std::function<void(std::size_t done, std::size_t total)>;

// The candidates a request spans, in a fixed order; throws InputError (with the
// reason) when the request admits none.
std::vector<Candidate> enumerate_candidates(const SearchRequest& request);
// Partitions and simulates every candidate on `request.threads` threads, calling
// `progress` from the calling thread now and then.
SearchResult search_plans(const SearchRequest& request, const ProgressFn& progress = {});
// The best fitting candidate; throws InputError naming the smallest memory any
// candidate needs when none fits.
const Candidate& winner(const SearchResult& result);
// Why the winner wins: a few sentences comparing it with the best alternatives.
std::vector<std::string> explain_winner(const SearchResult& result);

// The profile a candidate's plan refers to: the request's, topologically ordered, with
// its layers permuted into c.layer_order when that is not empty.
Profile reordered_profile(const SearchRequest& request, const Candidate& c);

Json candidate_to_json(const Candidate& c, int64_t batch);
Json search_to_json(const SearchResult& result, const SearchRequest& request);
std::string candidates_csv(const SearchResult& result, int64_t batch);

}  // namespace pipescope
