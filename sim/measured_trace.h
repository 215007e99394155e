// A measured run's spans, read from the Chrome trace `pipescope_torch run --trace` writes
// (its contract: docs/torch-run.md, "The trace calibrate reads"): per rank and timed step,
// the step itself, every op (forward, backward, backward_input, backward_weight), the
// loss, each call that posts p2p ops and each wait on them, the optimizer step and the
// zeroing of gradients. `pipescope calibrate` (sim/calibrate.h) fits a runtime to it.
//
// Invariant: what read_measured_trace returns is well formed or it throws InputError
// naming the file and the event: every span has a known category, a step index, a
// non-negative duration, and lies inside its rank's `step` span of the same step; each
// (rank, step) has exactly one step span; ops name their stage and micro-batch.
// Events of other categories (a viewer's metadata, "transfer") are skipped.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/json_reader.h"
#include "core/schedule.h"

namespace pipescope {

enum class SpanKind : uint8_t { Op, Step, Loss, P2pIssue, P2pWait, Optimizer, ZeroGrad };

struct MeasuredSpan {
  SpanKind kind = SpanKind::Op;
  OpKind op = OpKind::Forward;  // kind == Op
  int rank = 0;
  int step = 0;
  int stage = -1, microbatch = -1;  // ops and the loss
  int64_t start_ns = 0, duration_ns = 0;
  int sends = 0, recvs = 0;                 // P2pIssue
  int64_t send_bytes = 0, recv_bytes = 0;   // P2pIssue
  int64_t end_ns() const { return start_ns + duration_ns; }
};

struct MeasuredTrace {
  std::string source;  // the file
  std::string name;    // the trace's process name ("pipescope_torch 1f1b"), "" if none
  int ranks = 0;       // 1 + the largest rank seen
  int steps = 0;       // 1 + the largest step seen
  // Per rank, per step: its spans in start order (a step's `step` span first).
  std::vector<std::vector<std::vector<MeasuredSpan>>> spans;
};

MeasuredTrace read_measured_trace(const JsonReader& r);

}  // namespace pipescope
