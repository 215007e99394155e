// The LLM-scale planner: every parallel layout (t, cp, ep, d, p, v, pipeline schedule, SP,
// micro-batch b and count M, recompute, sharding) of a model on a GPU count that the framework runs
// (llm/framework.h) and validate_layout accepts, pruned by memory (llm/memory.h's peak
// per GPU against the GPU's capacity), ranked by a lower bound on the step, and timed
// exactly (llm/step_time.h: the pipeline simulated) only while a candidate's bound can
// still beat the K-th best exact step (branch and bound). Each layout with p > 1 is one
// candidate tried with two splits of its layers, the even one and llm/balanced_split.h's,
// and keeps the faster (a tie: the even one), so the answer is never slower than the
// even-only search's (balanced_split = false). Invariants: the bound never
// exceeds the exact step (tests/llm/llm_layout_search_test.cpp holds it, and holds
// branch and bound to the exhaustive search); candidates, ties and explanations come out
// in the same order on every run (ties broken by the layout's key, t first).
//   LlmSearchResult r = search_layouts(request);   // r.best[0].layout, r.why
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "llm/gpu_model.h"
#include "llm/layout.h"
#include "llm/layout_check.h"
#include "llm/memory.h"
#include "llm/step_time.h"

namespace pipescope {

struct LlmSearchProgress {
  int64_t enumerated = 0, valid = 0, fitting = 0, simulated = 0;
  bool enumerating = true;  // false: the branch and bound is simulating
};

struct LlmSearchRequest {
  TransformerShape shape;        // vocabulary before padding (padded per t)
  int vocab_divisible_by = 128;  // --make-vocab-size-divisible-by
  int gpus = 0;
  int global_batch = 0;          // sequences per step: b x M x d
  Framework framework = Framework::Megatron;
  PrecisionRecipe precision = PrecisionRecipe::Bf16Mixed;
  // What every candidate runs (llm/layout.h): the attention kernel, the linears' fp8 recipe,
  // fused or eager elementwise ops. The TP overlap is searched where the framework offers it
  // (t > 1 with SP); tp_comm_overlap pins it.
  AttentionKernel attention = AttentionKernel::Flash;
  Fp8Recipe fp8 = Fp8Recipe::None;
  bool fused_elementwise = true;
  std::optional<bool> tp_comm_overlap;
  std::string order = "tp-cp-ep-dp-pp";
  StepOptions options;            // what was asked; each layout runs set_framework_overlap's (llm/framework.h)
  // Pins: > 0 fixes the dimension, 0 searches it.
  int t = 0, cp = 0, ep = 0, p = 0, v = 0, micro_batch = 0;
  // Pins the schedule (with p > 1); it must be one the framework runs and llm/ times
  // (llm/framework.h's llm_schedules), else InputError naming --schedule and the framework.
  std::optional<ScheduleKind> schedule;
  int max_micro_batch = 8;       // b runs over the powers of two up to this
  int max_v = 8;                 // v runs over divisors of a rank's layers up to this
  int top = 5;                   // how many exact best layouts to return
  double memory_bytes = 0;       // per GPU; 0: the GPU file's memory_bytes
  // Kept free of memory_bytes (--memory-headroom): what a launch adds beside the model's
  // bytes. < 0: the framework's reserve (llm/framework.h's MemoryReserve).
  double headroom_bytes = -1;
  bool exhaustive = false;       // simulate every fitting layout (the tests' oracle)
  bool balanced_split = true;    // also try llm/balanced_split.h's split of the layers; false: the even split only (the tests' baseline)
  std::function<void(const LlmSearchProgress&)> progress;  // called now and then; may be empty
};

struct LlmCandidate {
  ParallelLayout layout;         // validated
  int vocabulary = 0;            // padded for layout.t
  double peak_bytes = 0;         // llm_memory's peak per GPU
  std::vector<RankMemory> ranks; // per pipeline rank, by kind (bytes per GPU); empty: not simulated
  int64_t bound_ns = 0;          // lower bound on step_ns
  int64_t step_ns = -1;          // exact; -1: not simulated
  int64_t pipeline_ns = 0, dp_exposed_ns = 0, sharding_ns = 0;
  double bubble = 0, mfu = 0;
  std::string schedule;          // the layout's: "1f1b", "interleaved", "zb-v", ...
  // The split of layers the search timed this layout against (llm/balanced_split.h): the
  // even one where layout.layers_per_chunk is the balanced split (`balanced`), else the
  // balanced one; empty where there was none (p = 1, or both splits are the same).
  bool balanced = false;
  std::vector<int> other_split;
  bool other_fits = true;        // false: other_split does not fit the GPU
  int64_t other_step_ns = -1;    // its exact step; -1: not timed (it does not fit, or its bound could not win)
};

// What the search saw of one value of one dimension (t = 4, recompute = full, ...).
struct DimensionValue {
  int64_t valid = 0, fitting = 0;
  double min_need = 0;           // smallest peak over its valid layouts (0: none valid)
  int64_t best_bound = -1;       // over its fitting layouts (-1: none)
  int64_t best_step = -1;        // over its simulated layouts (-1: none)
  std::string invalid;           // why a layout with it was refused (the first reason)
};

struct LlmSearchResult {
  std::vector<LlmCandidate> best;  // exact, fastest first, at most top
  int64_t factorizations = 0;      // (t, cp, d, p) with t cp d p = gpus (pins applied)
  int64_t enumerated = 0, valid = 0, fitting = 0, simulated = 0;
  double capacity = 0;             // the GPU's bytes
  double headroom = 0;             // kept free of them; a layout fits when its peak <= usable()
  double usable() const { return capacity - headroom; }
  double smallest_need = 0;        // the smallest peak of any valid layout
  ParallelLayout smallest_layout;  // ... and that layout
  // dimension name ("t", "cp", "ep", "p", "d", "v", "schedule", "b", "sp", "recompute", "sharding")
  // -> value (enums as their integer) -> what the search saw.
  std::map<std::string, std::map<int, DimensionValue>> dimensions;
  std::vector<std::string> why;    // why the best's t, cp, p, d, ... (one line each)
  std::vector<std::string> lost;   // one line per runner-up: best[i + 1]
};

// Every ordered (t, cp, d, p) with t * cp * d * p == gpus, t ascending, then cp, p, d.
std::vector<std::array<int, 4>> degree_tuples(int gpus);

// Layers of each pipeline rank: L / p each when p divides L, else ceil(L / p) less one
// on the last rank, then the first, then the second to last ... (the embedding and the
// head sit there: Llama 3 405B's 126 layers on 16 ranks of 8, 7 on the first and last).
std::vector<int> rank_layers(int layers, int p);
// The p * v chunks in model order (chunk c on rank c % p, or for a V (v = 2, `v_shape`)
// rank r's chunks r and 2p-1-r), rank r's layers split into v chunks as evenly as
// possible, the larger ones last. Empty when a rank has < v layers.
std::vector<int> layout_chunks(int layers, int p, int v, bool v_shape = false);
// The even split the search has always tried: L / (p v) each where p v divides L (empty:
// ParallelLayout's own "even"), else layout_chunks for the layout's schedule (a V for zb-v,
// dualpipev). balanced_chunks (llm/balanced_split.h) is tried beside it.
std::vector<int> even_chunks(int layers, const ParallelLayout& layout);

// Throws InputError naming the flag: pins that do not divide --gpus, a bad global batch,
// or no layout that fits (naming the smallest need found and its layout).
LlmSearchResult search_layouts(const LlmSearchRequest& request, const GpuModel& gpu);

// The lower bound the search ranks by and the exact step and memory it confirms with
// (llm/job.h's evaluate_job, the one evaluation of a job), for one validated layout
// (vocabulary already padded) run with `options`' overlap (the layout's own, in the
// search). `walked`: the layout's cached in-flight counts, or nullptr. Exposed for the tests.
int64_t layout_bound_ns(const TransformerShape& shape, const ParallelLayout& layout, const GpuModel& gpu,
                        const StepOptions& options);
LlmCandidate time_layout(const TransformerShape& shape, const ParallelLayout& layout, const GpuModel& gpu,
                         const StepOptions& options, const InFlight* walked = nullptr);

// "t 8 sp cp 1 ep 1 d 128 p 16 v 1 b 1 M 16 selective distributed-optimizer", then the
// schedule's name where it is not Megatron's default for v ("... zb-v").
std::string layout_summary(const ParallelLayout& layout);

}  // namespace pipescope
