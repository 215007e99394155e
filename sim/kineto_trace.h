// A measured run read from torch.profiler's Chrome traces (`prof.export_chrome_trace`, one
// file per rank; Kineto's format), as the spans `pipescope calibrate` fits (sim/measured_trace.h).
// What each span comes from (docs/runtime-costs.md, "Calibrating from torch.profiler"):
//   step        `ProfilerStep#N` (user_annotation); steps are numbered from the first N
//               every rank recorded, and every rank must record the same steps;
//   op          `PP:<stage><F|B|I|W><mb>` (torch's runtime-based schedule classes:
//               ScheduleInterleaved1F1B, ScheduleLoopedBFS, ScheduleInterleavedZeroBubble,
//               ScheduleZBVZeroBubble, ScheduleDualPipeV), or `Forward <mb>` / `Backward
//               <mb>` (ScheduleGPipe; its stage is the rank's). Schedule1F1B records none
//               and is refused: calibrate it from `pipescope_torch run --trace`;
//   p2p_issue   each `c10d::send` / `c10d::recv_` cpu_op (one send or receive; its bytes
//               from "Input Dims" and "Input type" when the profile recorded shapes, else 0);
//   p2p_wait    inside the op that consumes a receive, from the op's start (or the end of
//               the receive's issue inside it) to the receive's completion, the end of its
//               `<backend>:recv` annotation; the receive an op consumes is the one posted
//               inside it (GPipe) or by `PP:<stage>RECV_F<mb>` (F) / `RECV_B<mb>` (B, I);
//   loss        the outermost cpu_op named `*loss*` (not `*_backward`) inside a forward;
//   optimizer   `Optimizer.step#...`; zero_grad `Optimizer.zero_grad#...`.
// An op keeps what is left between its wait (or receive issue) and its first send issue
// or loss: time in an op span outside that (torch's Python around it) counts as the gap
// before the next op, as in the bridge's trace. Every rank's clock is taken as the same
// (one host, or hosts whose clocks agree to well below an op).
//
// Invariant: what read_kineto_traces returns satisfies read_measured_trace's invariant or
// it throws InputError naming the file and the event.
//   MeasuredTrace t = load_measured_traces({"rank0.json", "rank1.json"});
#pragma once

#include <string>
#include <vector>

#include "core/json_reader.h"
#include "sim/measured_trace.h"

namespace pipescope {

// A torch.profiler trace: an object with "traceEvents" and Kineto's "schemaVersion" or
// "distributedInfo" (the bridge's trace has neither).
bool is_kineto_trace(const JsonReader& r);

// One file per rank (each file's distributedInfo.rank, which must cover 0..n-1 once).
MeasuredTrace read_kineto_traces(const std::vector<JsonReader>& ranks);

// What `calibrate --trace` reads: one bridge trace, or one torch.profiler trace per rank.
MeasuredTrace load_measured_traces(const std::vector<std::string>& paths);

}  // namespace pipescope
