// The pipeline schedule of a ParallelLayout: which kind runs (the layout's, else
// Megatron-LM's 1f1b / interleaved by v), why a layout cannot run it (in flags' words; the
// rules on v and M are the kind's record, core/schedule_kinds.h), where chunk c sits (c %
// p, or c < p ? c : 2p-1-c for the V-shapes), and how many chunk-micro-batches (and bytes) each rank keeps alive,
// counted on the generator's own op order. Invariant: a layout schedule_refusal accepts
// builds with make_schedule and simulates; the kinds llm/ times are timed_schedules().
//   ScheduleKind k = layout_schedule(layout);          // zb-v, or 1f1b by default
//   InFlight f = schedule_in_flight(k, p, v, M);      // f.rank_chunks[r]: rank r's peak
#pragma once

#include <string>
#include <vector>

#include "core/schedule.h"
#include "llm/layout.h"

namespace pipescope {

// The layout's schedule: layout.schedule, else interleaved when v > 1, else 1f1b.
ScheduleKind layout_schedule(const ParallelLayout& layout);

// What llm/step_time.h can time (torch.distributed.pipelining's classes): gpipe, 1f1b,
// interleaved, looped-bfs, interleaved-zb, zb-v, dualpipev.
const std::vector<ScheduleKind>& timed_schedules();

// Why the layout cannot run its schedule ("" when it can), naming the field: a kind
// llm/ does not time, v the kind does not take (core/schedule_kinds.h's
// schedule_takes_chunks), M its generator refuses (microbatch_refusal: interleaved M a
// multiple of p; interleaved-zb of max(1, M / p); dualpipev M >= 2p), p = 1 with
// anything but 1f1b.
std::string schedule_refusal(const ParallelLayout& layout);

// The rank chunk c (0 .. p v - 1, model order) runs on.
int chunk_rank(const ParallelLayout& layout, int chunk);

// Whether every rank ends with a whole backward (B) whose input gradient runs down
// through the chunks of ranks r-1 .. 0 of the same micro-batch (the kinds without a split
// backward: gpipe, 1f1b, interleaved, looped-bfs): what the search's lower bound may add
// as a drain (llm/layout_bound.cpp).
bool ends_with_backward_chain(ScheduleKind kind);

// The peaks of alive chunk-micro-batches on the schedule's op order. A chunk-micro-batch
// is alive from the start of its F to the end of its B, or of its W under split backward
// (the counts: I frees part of a stash, never all of it). In bytes (peak_bytes), with
// core/op_rules.h's rule: F's start charges the stage's `held` bytes, the end of I frees
// `held - for_weight` (what W does not need), the end of B or W frees what is left.
struct InFlight {
  std::vector<int> rank_chunks;  // per rank: the most alive at once over its chunks
  int first_chunk = 0;           // the most alive at once of chunk 0 (the embedding's)
  int last_chunk = 0;            // of chunk p v - 1 (the head's)
  // For peak_bytes, per rank: its stages (chunks), and the states its op order passes
  // through at the start of each F that no other such state covers in every count: per
  // stage of the rank, the chunk-micro-batches alive before their I ends, then those past
  // I waiting for W (2 ints a stage).
  std::vector<std::vector<int>> rank_stages;
  std::vector<std::vector<std::vector<int>>> rank_states;
};
// Throws InputError (make_schedule's) when the generator refuses (p, v, M).
InFlight schedule_in_flight(ScheduleKind kind, int p, int v, int microbatches);

// Per rank, the most bytes alive at once on `walked`'s op order (the largest over its F
// states, so a call costs the few uncovered states, not the ops), where a chunk-micro-batch
// of stage (chunk) s holds held[s] from F's start to I's end and for_weight[s] (<= held[s])
// from I's end to W's end; B frees held[s] at its end. for_weight = held is the count's
// rule (I frees nothing): peak_bytes of 1 per stage is rank_chunks.
//   InFlight f = schedule_in_flight(ScheduleKind::ZeroBubbleV, 4, 2, 8);
//   std::vector<double> peak = peak_bytes(f, held, for_weight);  // peak[r]: rank r's bytes
std::vector<double> peak_bytes(const InFlight& walked, const std::vector<double>& held,
                               const std::vector<double>& for_weight);

}  // namespace pipescope
