// Schedule kinds as data: one record per built-in kind (its name, chunk rule and stage
// placement, the micro-batch counts its generator refuses, whether its backward is split,
// its weight update, the closed form of its peak in-flight count) that the generators'
// checks, the planner's enumeration, llm/'s pipeline schedule, the CLI's names and help
// and the GUI all read. What an op means stays in core/op_rules.h. Invariant: a record
// refuses (K, v, M) exactly when its generator does, and its in-flight closed form is the
// count walked on its generator's op order (tests/schedules/schedule_kinds_test.cpp).
//   const ScheduleKindInfo& zbv = schedule_kind(ScheduleKind::ZeroBubbleV);
//   zbv.name;                                // "zb-v"
//   microbatch_refusal(ScheduleKind::DualPipeV, 4, 7);  // "dualpipev needs at least 2K = 8 ..."
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace pipescope {

// The built-in generators. A Schedule does not remember which one made it (it keeps
// a name for reports); its ops say everything else. Each kind's facts: kScheduleKinds
// in core/schedule_kinds.cpp.
enum class ScheduleKind {
  GPipe,
  OneFOneB,
  Interleaved,
  ZeroBubbleH1,
  ZeroBubbleH2,    // zb-h2: 2K-1 micro-batches alive on the first stage, no bubble when F = I = W
  ZeroBubbleV,     // zb-v: V-shape, 2 chunks per device, 1F1B's activation memory
  DualPipeV,       // dualpipev: DeepSeek's V-shape, M >= 2K
  ZeroBubbleAuto,  // zb-auto: a searched order under a cap of alive micro-batches
  LoopedBFS,       // looped-bfs: breadth-first over v chunks per position (PyTorch's ScheduleLoopedBFS)
  InterleavedZeroBubble,  // interleaved-zb: ZB1P over v chunks (PyTorch's ScheduleInterleavedZeroBubble)
  VMin,            // v-min: V-shape, about K/3 micro-batches' activations (controllable memory)
  VHalf,           // v-half: V-shape, about K/2
  VZeroBubble,     // v-zb: V-shape, K (1F1B's), the building block of the controllable-memory paper
  PipeDream,       // pipedream: 1F1B across steps without a flush, weight stashing (asynchronous)
  PipeDream2BW,    // 2bw: PipeDream-2BW, two weight versions, updates one step late (asynchronous)
};
// How a stage's weights change along its op list (core/op_rules.h's WeightVersions
// states the rules; docs/pipedream.md explains them).
enum class WeightUpdate : uint8_t {
  Flush,         // synchronous: gradients accumulate over the step; one optimizer step after its last op
  Stash,         // PipeDream: each micro-batch's backward updates its stage at once; F stashes the
                 // version it used so that its backward uses the same one
  DoubleBuffer,  // PipeDream-2BW: step t runs on version max(t-1, 0); its accumulated gradient
                 // makes W(t+1) = W(t) - lr g(t) when the stage's last micro-batch of t is done
};

// How many stages (chunks, v) a position holds and where stage s goes.
enum class ChunkRule : uint8_t {
  One,     // v = 1: stage s on position s
  Looped,  // any v: stage c K + d on position d (Megatron's interleaving map)
  VShape,  // v = 2: stages d and 2K-1-d on position d
};
// The micro-batch counts M a generator refuses on K positions.
enum class MicrobatchRule : uint8_t {
  Any,
  MultipleOfPositions,  // interleaved: M a multiple of K (Megatron-LM's rule)
  MultipleOfRounds,     // interleaved-zb: M a multiple of max(1, M / K) (ScheduleInterleavedZeroBubble's)
  TwicePositions,       // dualpipev: M >= 2K (dualpipev.py's num_chunks >= num_ranks * 2)
  Positions,            // 2bw: M >= K per step (PipeDream-2BW's m >= d: two weight versions suffice)
};

struct ScheduleKindInfo {
  ScheduleKind kind;
  const char* name;              // "zb-v": files, flags, reports
  ChunkRule chunks;
  bool several_chunks;           // Looped kinds the frameworks run only with v >= 2 (with v = 1 the
                                 // order is 1f1b's or gpipe's); their generators still build v = 1
  MicrobatchRule microbatches;
  bool split_backward;           // I and W as separate ops (three a (stage, micro-batch)); else B
  WeightUpdate weight_update;    // Flush, or the asynchronous kinds' Stash / DoubleBuffer
  // Peak chunk-micro-batches alive (F started, B or W not ended) on position d of K with v
  // chunks and M micro-batches, as the generator orders them; nullptr where no closed form
  // is known (v-min, v-half: walk the op lists).
  int (*in_flight)(int K, int d, int v, int M);
};

// Every built-in kind, in the order --help and the GUI list them.
const std::vector<ScheduleKindInfo>& schedule_kind_table();
const ScheduleKindInfo& schedule_kind(ScheduleKind kind);

std::string to_string(ScheduleKind kind);   // "gpipe", "1f1b", "interleaved", "zb-h1"
ScheduleKind parse_schedule_kind(const std::string& name);  // throws InputError naming every kind
// Every built-in schedule, in the order --help and the GUI list them.
const std::vector<ScheduleKind>& schedule_kinds();
std::string schedule_kind_names(const std::string& separator = " | ");  // "gpipe | 1f1b | ..."
// The names of the kinds where `pick` holds, in table order, the last two joined by " and ":
//   schedule_kind_names([](const ScheduleKindInfo& k) { return k.weight_update != WeightUpdate::Flush; })
//   // "pipedream and 2bw"
std::string schedule_kind_names(bool (*pick)(const ScheduleKindInfo&));
// Whether a record is of an asynchronous kind (a `pick` for the names above).
bool asynchronous_kind(const ScheduleKindInfo& kind);
// What `plan` and `sweep` search by default: every built-in, zb-auto included (its order
// is searched per plan on its costs, under the largest cap that fits), except the
// asynchronous ones (plan --allow-async).
std::vector<ScheduleKind> default_search_schedules();
// Whether the kind's steps overlap without a flush (pipedream, 2bw): not synchronous SGD.
bool is_asynchronous(ScheduleKind kind);
// Model chunks per device that `kind` needs: 2 for the V-shapes, 0 when any number
// (interleaved, looped-bfs, interleaved-zb), else 1.
int required_chunks(ScheduleKind kind);
// Whether the kind's stages are a V (stages d and 2K-1-d on position d).
bool v_shaped(ScheduleKind kind);
// Whether the frameworks run the kind with v chunks per position (gpipe, 1f1b and the
// other one-chunk kinds: v = 1; interleaved, looped-bfs: v > 1; interleaved-zb: any v;
// the V-shapes: v = 2).
bool schedule_takes_chunks(ScheduleKind kind, int v);
// The stage -> position map generator `kind` uses for K positions and v chunks.
std::vector<int> stage_position_map(ScheduleKind kind, int positions, int chunks);

// Why `kind`'s generator refuses M micro-batches on K positions ("" when it builds them),
// a sentence that calls the pipeline depth `k` (core's "K", llm/'s "p"), with the rule's
// source: "the interleaved schedule needs M to be a multiple of the number of stages K
// (Megatron-LM's rule); got M = 6, K = 4". Callers prefix the field.
std::string microbatch_refusal(ScheduleKind kind, int positions, int microbatches, const std::string& k = "K");

}  // namespace pipescope
