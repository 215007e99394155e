// Reads the bridge's Chrome trace (sim/measured_trace.h). Times in the file are
// microseconds (floats); inside, integer nanoseconds rounded once.
#include "sim/measured_trace.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include "core/error.h"
#include "core/limits.h"

namespace pipescope {
namespace {

constexpr int kMaxSteps = 100'000;
constexpr double kMaxUs = 1e12;  // 11.6 days: a trace's times are below this

struct Category {
  const char* name;
  SpanKind kind;
  OpKind op;
};
// Besides the ops, whose categories are to_string(OpKind) (core/schedule.h).
constexpr Category kCategories[] = {
    {"step", SpanKind::Step, OpKind::Forward},
    {"loss", SpanKind::Loss, OpKind::Forward},
    {"p2p_issue", SpanKind::P2pIssue, OpKind::Forward},
    {"p2p_wait", SpanKind::P2pWait, OpKind::Forward},
    {"optimizer", SpanKind::Optimizer, OpKind::Forward},
    {"zero_grad", SpanKind::ZeroGrad, OpKind::Forward},
};

std::optional<Category> category_of(const std::string& cat) {
  for (const OpKind k : {OpKind::Forward, OpKind::Backward, OpKind::BackwardInput, OpKind::BackwardWeight,
                         OpKind::Recompute}) {
    if (cat == to_string(k)) return Category{"", SpanKind::Op, k};
  }
  for (const Category& c : kCategories) {
    if (cat == c.name) return c;
  }
  return std::nullopt;
}

int64_t us_to_ns(const JsonReader& v) { return std::llround(v.as_double(-kMaxUs, kMaxUs) * 1000.0); }

}  // namespace

MeasuredTrace read_measured_trace(const JsonReader& r) {
  MeasuredTrace t;
  t.source = r.source();
  if (!r.json().is_object() || !r.has("traceEvents")) r.fail("expected a Chrome trace: an object with \"traceEvents\"");
  std::vector<MeasuredSpan> all;
  for (const JsonReader& e : r["traceEvents"].items()) {
    if (!e.json().is_object()) e.fail("expected an object");
    const std::string ph = e.has("ph") ? e["ph"].as_string() : "";
    if (ph == "M" && e.has("name") && e["name"].as_string() == "process_name" && e.has("args") &&
        e["args"].has("name")) {
      t.name = e["args"]["name"].as_string();
    }
    if (ph != "X" || !e.has("cat")) continue;
    const std::optional<Category> c = category_of(e["cat"].as_string());
    if (!c) continue;  // transfers and anything else a viewer shows
    MeasuredSpan s;
    s.kind = c->kind;
    s.op = c->op;
    s.rank = static_cast<int>(e["tid"].as_int(0, kMaxTraceRanks - 1));
    s.start_ns = us_to_ns(e["ts"]);
    s.duration_ns = us_to_ns(e["dur"]);
    if (s.duration_ns < 0) e["dur"].fail("expected a duration >= 0");
    const JsonReader args = e["args"];
    s.step = static_cast<int>(args["step"].as_int(0, kMaxSteps - 1));
    if (s.kind == SpanKind::Op || s.kind == SpanKind::Loss) {
      s.stage = static_cast<int>(args["stage"].as_int(0, kMaxTraceRanks - 1));
      s.microbatch = static_cast<int>(args["microbatch"].as_int(0, kMaxBatch));
    }
    if (s.kind == SpanKind::P2pIssue) {
      s.sends = static_cast<int>(args["sends"].as_int(0, 1 << 20));
      s.recvs = static_cast<int>(args["recvs"].as_int(0, 1 << 20));
      s.send_bytes = args["send_bytes"].as_int(0, int64_t{1} << 50);
      s.recv_bytes = args["recv_bytes"].as_int(0, int64_t{1} << 50);
      if (s.sends + s.recvs == 0) args.fail("a p2p_issue posts at least one send or receive");
    }
    t.ranks = std::max(t.ranks, s.rank + 1);
    t.steps = std::max(t.steps, s.step + 1);
    all.push_back(s);
  }
  if (all.empty()) r["traceEvents"].fail("no spans of a measured run (expected the categories of docs/torch-run.md)");
  t.spans.assign(t.ranks, std::vector<std::vector<MeasuredSpan>>(t.steps));
  for (const MeasuredSpan& s : all) t.spans[s.rank][s.step].push_back(s);
  for (int rank = 0; rank < t.ranks; ++rank) {
    for (int step = 0; step < t.steps; ++step) {
      std::vector<MeasuredSpan>& v = t.spans[rank][step];
      const std::string where = "rank " + std::to_string(rank) + ", step " + std::to_string(step);
      const auto steps = std::count_if(v.begin(), v.end(), [](const MeasuredSpan& s) { return s.kind == SpanKind::Step; });
      if (steps != 1) {
        r["traceEvents"].fail(where + ": expected one \"step\" span, found " + std::to_string(steps) +
                              " (every rank records every timed step)");
      }
      // The step span first, then by start (a span nested in an op starts no earlier).
      std::stable_sort(v.begin(), v.end(), [](const MeasuredSpan& a, const MeasuredSpan& b) {
        if ((a.kind == SpanKind::Step) != (b.kind == SpanKind::Step)) return a.kind == SpanKind::Step;
        return a.start_ns < b.start_ns;
      });
      const MeasuredSpan& step_span = v.front();
      for (const MeasuredSpan& s : v) {
        if (s.start_ns < step_span.start_ns || s.end_ns() > step_span.end_ns()) {
          r["traceEvents"].fail(where + ": a span at " + std::to_string(s.start_ns / 1000) +
                                " us lies outside the rank's step span");
        }
      }
    }
  }
  return t;
}


}  // namespace pipescope
