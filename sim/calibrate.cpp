// The fit of sim/calibrate.h: one walk over each rank's steps gathers the samples, then
// one least-squares problem per group of terms (Eigen's column-pivoting QR, which also
// says when two terms cannot be told apart).
#include "sim/calibrate.h"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/error.h"
#include "core/op_rules.h"

namespace pipescope {
namespace {

std::string kind_key(std::size_t k) { return std::string(1, op_letter(static_cast<OpKind>(k))); }  // the file's keys

struct GapSample {  // the runtime between two ops
  OpKind next;
  bool first;  // before the step's first op: the prologue's too
  double ns;
};
struct OpSample {
  OpKind kind;
  int stage;
  double measured_ns;
};
struct IssueSample {
  int sends, recvs;
  double ns;
};
struct TailSample {  // after a rank's last op
  bool last_stage;
  double ns;
};
struct OptimizerSample {
  double profiled_ns, ns;  // the profile's optimizer step of the rank's stages; the measured one
};

struct Samples {
  std::vector<GapSample> gaps;
  std::vector<OpSample> ops;
  std::vector<IssueSample> issues;
  std::vector<double> losses;
  std::vector<TailSample> tails;
  std::vector<OptimizerSample> optimizer;
};

struct LeastSquares {
  Eigen::VectorXd beta;
  int rank = 0;
  double rms = 0;
};

LeastSquares solve(const Eigen::MatrixXd& x, const Eigen::VectorXd& y) {
  LeastSquares out;
  if (x.rows() == 0 || x.cols() == 0) return out;
  const auto qr = x.colPivHouseholderQr();
  out.rank = static_cast<int>(qr.rank());
  out.beta = qr.solve(y);
  out.rms = std::sqrt((x * out.beta - y).squaredNorm() / static_cast<double>(x.rows()));
  return out;
}

int64_t rounded(double ns) { return std::llround(ns); }

// The profile's time of an op of `kind` on `stage`, under the first stage's split rule.
double profiled_ns(const CostModel& c, OpKind kind, int stage, bool weight_pass_runs_all) {
  const StageCost& cost = c.stages[static_cast<std::size_t>(stage)];
  if (weight_pass_runs_all && stage == 0) {
    if (kind == OpKind::BackwardInput) return 0;
    if (kind == OpKind::BackwardWeight) return static_cast<double>(cost.backward_ns);
  }
  return static_cast<double>(op_duration_ns(kind, cost));
}

Samples gather(const MeasuredTrace& t, const CostModel& c, bool loss_in_profile) {
  Samples out;
  const int last_stage = static_cast<int>(c.stages.size()) - 1;
  for (int rank = 0; rank < t.ranks; ++rank) {
    for (const std::vector<MeasuredSpan>& spans : t.spans[static_cast<std::size_t>(rank)]) {
      const MeasuredSpan& step = spans.front();
      int64_t cursor = step.start_ns, accounted = 0;
      bool first = true, holds_last_stage = false;
      double profiled_optimizer = 0;
      std::vector<bool> counted(c.stages.size(), false);
      OpSample* last_forward_of_last_stage = nullptr;
      out.ops.reserve(out.ops.size() + spans.size());
      for (std::size_t i = 1; i < spans.size(); ++i) {
        const MeasuredSpan& s = spans[i];
        if (s.start_ns < cursor) continue;  // nested in an op: the op's own time
        switch (s.kind) {
          case SpanKind::Op: {
            if (s.stage > last_stage) {
              throw InputError(t.source, "traceEvents",
                               "rank " + std::to_string(rank) + " ran stage " + std::to_string(s.stage) +
                                   " but the plan has " + std::to_string(last_stage + 1) + " stages");
            }
            out.gaps.push_back({s.op, first, static_cast<double>(s.start_ns - cursor - accounted)});
            out.ops.push_back({s.op, s.stage, static_cast<double>(s.duration_ns)});
            last_forward_of_last_stage = s.op == OpKind::Forward && s.stage == last_stage ? &out.ops.back() : nullptr;
            if (!counted[static_cast<std::size_t>(s.stage)]) {
              counted[static_cast<std::size_t>(s.stage)] = true;
              profiled_optimizer += static_cast<double>(c.stages[static_cast<std::size_t>(s.stage)].optimizer_ns);
            }
            holds_last_stage = holds_last_stage || s.stage == last_stage;
            first = false;
            cursor = s.end_ns();
            accounted = 0;
            break;
          }
          case SpanKind::Loss:
            if (loss_in_profile && last_forward_of_last_stage) {
              last_forward_of_last_stage->measured_ns += static_cast<double>(s.duration_ns);
            } else if (!loss_in_profile) {
              out.losses.push_back(static_cast<double>(s.duration_ns));
            }
            accounted += s.duration_ns;
            break;
          case SpanKind::P2pIssue:
            out.issues.push_back({s.sends, s.recvs, static_cast<double>(s.duration_ns)});
            accounted += s.duration_ns;
            break;
          case SpanKind::P2pWait:
            accounted += s.duration_ns;
            break;
          case SpanKind::Optimizer:
            out.optimizer.push_back({-1, static_cast<double>(s.duration_ns)});  // profiled below, once the ops are seen
            accounted += s.duration_ns;
            break;
          case SpanKind::ZeroGrad:
          case SpanKind::Step:
            break;
        }
      }
      if (first) continue;  // a rank that ran no op in this step
      for (auto it = out.optimizer.rbegin(); it != out.optimizer.rend() && it->profiled_ns < 0; ++it) {
        it->profiled_ns = profiled_optimizer;
      }
      out.tails.push_back({holds_last_stage, static_cast<double>(step.end_ns() - cursor - accounted)});
    }
  }
  return out;
}

void add_term(Calibration& cal, std::string name, double value_ns, int samples, double rms_ns) {
  cal.terms.push_back({std::move(name), value_ns / 1000.0, samples, rms_ns / 1000.0});
}

// action_us per kind and the prologue: gap ~ sum_k beta_k [next == k] + pi [first]. When
// the first op of every step is the only op of its kind (M = 1: each rank's first op is its
// only forward), the prologue cannot be told from that kind's action: it is taken as 0.
void fit_actions(const Samples& s, Calibration& cal) {
  std::vector<int> column(5, -1);
  int p = 0;
  for (const GapSample& g : s.gaps) {
    int& col = column[static_cast<std::size_t>(g.next)];
    if (col < 0) col = p++;
  }
  const auto design = [&](bool with_prologue) {
    Eigen::MatrixXd x = Eigen::MatrixXd::Zero(static_cast<Eigen::Index>(s.gaps.size()), p + (with_prologue ? 1 : 0));
    for (std::size_t i = 0; i < s.gaps.size(); ++i) {
      const auto r = static_cast<Eigen::Index>(i);
      x(r, column[static_cast<std::size_t>(s.gaps[i].next)]) = 1;
      if (with_prologue) x(r, p) = s.gaps[i].first ? 1 : 0;
    }
    return x;
  };
  Eigen::VectorXd y(static_cast<Eigen::Index>(s.gaps.size()));
  for (std::size_t i = 0; i < s.gaps.size(); ++i) y(static_cast<Eigen::Index>(i)) = s.gaps[i].ns;
  LeastSquares ls = solve(design(true), y);
  const bool separable = ls.rank == p + 1;
  if (!separable) {
    ls = solve(design(false), y);
    ls.beta.conservativeResize(p + 1);
    ls.beta(p) = 0;
    cal.notes.push_back("every step's first op is the only op of its kind on its rank: the prologue cannot be told "
                        "from that kind's action term and is taken as 0 (more micro-batches separate them)");
  }
  const int prologue = p;
  for (std::size_t k = 0; k < 5; ++k) {
    if (column[k] < 0) continue;
    const int n = static_cast<int>(std::count_if(s.gaps.begin(), s.gaps.end(), [&](const GapSample& g) {
      return static_cast<std::size_t>(g.next) == k;
    }));
    cal.runtime.action_ns[k] = std::max<int64_t>(0, rounded(ls.beta(column[k])));
    add_term(cal, "action_us." + kind_key(k), static_cast<double>(cal.runtime.action_ns[k]), n, ls.rms);
  }
  // A kind the run never ran (a 1F1B run has no I or W) takes the mean of the kinds it did:
  // scheduling an action costs the runtime about the same whatever the action.
  double seen_sum = 0;
  int seen = 0;
  std::string unseen;
  for (std::size_t k = 0; k < 5; ++k) {
    if (column[k] >= 0) {
      seen_sum += static_cast<double>(cal.runtime.action_ns[k]);
      ++seen;
    } else {
      unseen += std::string(unseen.empty() ? "" : ", ") + kind_key(k);
    }
  }
  if (seen > 0 && !unseen.empty()) {
    for (std::size_t k = 0; k < 5; ++k) {
      if (column[k] < 0) cal.runtime.action_ns[k] = rounded(seen_sum / seen);
    }
    cal.notes.push_back("the run has no " + unseen + " actions: their action_us is the mean of the kinds it has (" +
                        std::to_string(std::llround(seen_sum / seen / 1000.0)) +
                        " us); their op_us is 0 (as profiled)");
  }
  const int firsts = static_cast<int>(std::count_if(s.gaps.begin(), s.gaps.end(), [](const GapSample& g) { return g.first; }));
  cal.runtime.prologue_ns = std::max<int64_t>(0, rounded(ls.beta(prologue)));
  add_term(cal, "step.prologue_us", static_cast<double>(cal.runtime.prologue_ns), firsts, ls.rms);
}

// op_us per kind under one first-stage rule; returns the sum of squared residuals.
double fit_ops(const Samples& s, const CostModel& c, bool weight_pass_runs_all, std::array<int64_t, 5>& op_ns,
               std::array<int, 5>& counts, std::array<double, 5>& rms) {
  std::array<double, 5> sum{}, sq{};
  counts = {};
  for (const OpSample& o : s.ops) {
    const std::size_t k = static_cast<std::size_t>(o.kind);
    sum[k] += o.measured_ns - profiled_ns(c, o.kind, o.stage, weight_pass_runs_all);
    ++counts[k];
  }
  for (std::size_t k = 0; k < 5; ++k) op_ns[k] = counts[k] > 0 ? rounded(sum[k] / counts[k]) : 0;
  double ssr = 0;
  for (const OpSample& o : s.ops) {
    const std::size_t k = static_cast<std::size_t>(o.kind);
    const double r = o.measured_ns - profiled_ns(c, o.kind, o.stage, weight_pass_runs_all) - static_cast<double>(op_ns[k]);
    sq[k] += r * r;
    ssr += r * r;
  }
  for (std::size_t k = 0; k < 5; ++k) rms[k] = counts[k] > 0 ? std::sqrt(sq[k] / counts[k]) : 0;
  return ssr;
}

void fit_op_terms(const Samples& s, const CostModel& c, Calibration& cal) {
  std::array<int64_t, 5> as_profiled{}, runs_all{};
  std::array<int, 5> counts{};
  std::array<double, 5> rms_profiled{}, rms_all{};
  const double ssr_profiled = fit_ops(s, c, false, as_profiled, counts, rms_profiled);
  const bool first_stage_split = std::any_of(s.ops.begin(), s.ops.end(), [](const OpSample& o) {
    return o.stage == 0 && o.kind == OpKind::BackwardInput;
  });
  double ssr_all = ssr_profiled;
  if (first_stage_split) ssr_all = fit_ops(s, c, true, runs_all, counts, rms_all);
  const bool runs_all_wins = first_stage_split && ssr_all < ssr_profiled;
  cal.runtime.op_ns = runs_all_wins ? runs_all : as_profiled;
  const std::array<double, 5>& rms = runs_all_wins ? rms_all : rms_profiled;
  cal.runtime.first_stage_split = runs_all_wins ? FirstStageSplit::WeightPassRunsAll : FirstStageSplit::AsProfiled;
  for (std::size_t k = 0; k < 5; ++k) {
    if (counts[k] > 0) {
      add_term(cal, "op_us." + kind_key(k), static_cast<double>(cal.runtime.op_ns[k]), counts[k], rms[k]);
    }
  }
  if (first_stage_split) {
    cal.notes.push_back(std::string("split backward on the first stage: ") +
                        (runs_all_wins ? "I does nothing and W runs the whole backward" : "I and W as profiled") +
                        " fits better (RMS residual of every op " +
                        std::to_string(std::llround(std::sqrt(ssr_all / s.ops.size()) / 1000.0)) + " us against " +
                        std::to_string(std::llround(std::sqrt(ssr_profiled / s.ops.size()) / 1000.0)) + " us)");
  }
}

void fit_messages(const Samples& s, Calibration& cal) {
  if (s.issues.empty()) return;
  const auto n = static_cast<Eigen::Index>(s.issues.size());
  Eigen::MatrixXd x(n, 2);
  Eigen::VectorXd y(n);
  double total = 0, messages = 0;
  for (Eigen::Index i = 0; i < n; ++i) {
    const IssueSample& m = s.issues[static_cast<std::size_t>(i)];
    x(i, 0) = m.sends;
    x(i, 1) = m.recvs;
    y(i) = m.ns;
    total += m.ns;
    messages += m.sends + m.recvs;
  }
  const LeastSquares ls = solve(x, y);
  const int sends = static_cast<int>(x.col(0).sum()), recvs = static_cast<int>(x.col(1).sum());
  if (ls.rank == 2 && ls.beta(0) >= 0 && ls.beta(1) >= 0) {
    cal.runtime.send_issue_ns = rounded(ls.beta(0));
    cal.runtime.recv_issue_ns = rounded(ls.beta(1));
    add_term(cal, "message.send_issue_us", ls.beta(0), sends, ls.rms);
    add_term(cal, "message.recv_issue_us", ls.beta(1), recvs, ls.rms);
    return;
  }
  // Sends and receives always posted together in like numbers (or a negative split):
  // one cost per message, on each end.
  const double per = total / std::max(messages, 1.0);
  double sq = 0;
  for (const IssueSample& m : s.issues) sq += std::pow(m.ns - per * (m.sends + m.recvs), 2);
  const double rms = std::sqrt(sq / static_cast<double>(s.issues.size()));
  cal.runtime.send_issue_ns = cal.runtime.recv_issue_ns = rounded(per);
  add_term(cal, "message.send_issue_us", per, sends, rms);
  add_term(cal, "message.recv_issue_us", per, recvs, rms);
  cal.notes.push_back("sends and receives were posted together in like numbers: one issue cost per message, the same "
                      "for both ends");
}

void fit_step_terms(const Samples& s, Calibration& cal) {
  if (!s.losses.empty()) {
    const double mean = std::accumulate(s.losses.begin(), s.losses.end(), 0.0) / static_cast<double>(s.losses.size());
    double sq = 0;
    for (double v : s.losses) sq += (v - mean) * (v - mean);
    cal.runtime.loss_ns = rounded(mean);
    add_term(cal, "loss_us", mean, static_cast<int>(s.losses.size()), std::sqrt(sq / static_cast<double>(s.losses.size())));
  }
  if (!s.tails.empty()) {
    const auto n = static_cast<Eigen::Index>(s.tails.size());
    Eigen::MatrixXd x(n, 2);
    Eigen::VectorXd y(n);
    for (Eigen::Index i = 0; i < n; ++i) {
      x(i, 0) = 1;
      x(i, 1) = s.tails[static_cast<std::size_t>(i)].last_stage ? 1 : 0;
      y(i) = s.tails[static_cast<std::size_t>(i)].ns;
    }
    LeastSquares ls = solve(x, y);
    double last = ls.rank == 2 ? ls.beta(1) : 0;
    double base = ls.rank == 2 ? ls.beta(0) : y.mean();
    if (ls.rank < 2) ls.rms = std::sqrt((y.array() - base).square().mean());
    cal.runtime.epilogue_ns = std::max<int64_t>(0, rounded(base));
    cal.runtime.last_stage_epilogue_ns = std::max<int64_t>(0, rounded(last));
    const int lasts = static_cast<int>(x.col(1).sum());
    add_term(cal, "step.epilogue_us", static_cast<double>(cal.runtime.epilogue_ns), static_cast<int>(n), ls.rms);
    add_term(cal, "step.last_stage_epilogue_us", static_cast<double>(cal.runtime.last_stage_epilogue_ns), lasts, ls.rms);
  }
  // The optimizer: the measured step less the profile's (its optimizer_ms of the rank's
  // layers), one constant per device. Not a per-byte rate: fitted on a small model, a rate
  // would carry its fixed Python cost to every byte of a large one.
  if (!s.optimizer.empty()) {
    double sum = 0;
    for (const OptimizerSample& o : s.optimizer) sum += o.ns - std::max(o.profiled_ns, 0.0);
    const double mean = sum / static_cast<double>(s.optimizer.size());
    double sq = 0;
    for (const OptimizerSample& o : s.optimizer) sq += std::pow(o.ns - std::max(o.profiled_ns, 0.0) - mean, 2);
    cal.runtime.optimizer_ns = rounded(mean);
    add_term(cal, "step.optimizer_us", mean, static_cast<int>(s.optimizer.size()),
             std::sqrt(sq / static_cast<double>(s.optimizer.size())));
  }
}

}  // namespace

Calibration calibrate(const MeasuredTrace& measured, const CostModel& c, const CalibrationOptions& o) {
  Calibration cal;
  std::vector<double> all_ms;
  for (int step = 0; step < measured.steps; ++step) {
    int64_t begin = INT64_MAX, end = INT64_MIN;
    for (int rank = 0; rank < measured.ranks; ++rank) {
      const MeasuredSpan& s = measured.spans[static_cast<std::size_t>(rank)][static_cast<std::size_t>(step)].front();
      begin = std::min(begin, s.start_ns);
      end = std::max(end, s.end_ns());
    }
    all_ms.push_back(static_cast<double>(end - begin) / 1e6);
  }
  if (measured.steps < kMinSteps) {
    throw InputError(measured.source + ": the run has " + std::to_string(measured.steps) + " timed step" +
                     (measured.steps == 1 ? "" : "s") + "; calibrate needs at least " + std::to_string(kMinSteps) +
                     " (pipescope_torch run --steps N) to tell a runtime term from noise");
  }
  // Outlier steps (kOutlierStepFactor) leave the fit, named in a note; the rest must agree.
  std::vector<double> sorted = all_ms;
  std::sort(sorted.begin(), sorted.end());
  const std::size_t n = sorted.size();
  const double median_ms = n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
  MeasuredTrace t{measured.source, measured.name, measured.ranks, 0, {}};  // the kept steps
  t.spans.resize(measured.spans.size());
  std::string dropped;
  for (int step = 0; step < measured.steps; ++step) {
    const double ms = all_ms[static_cast<std::size_t>(step)];
    if (ms > kOutlierStepFactor * median_ms) {
      dropped += (dropped.empty() ? "step " : ", step ") + std::to_string(step) + " (" +
                 std::to_string(std::llround(ms * 1000)) + " us)";
      continue;
    }
    for (std::size_t rank = 0; rank < measured.spans.size(); ++rank) {
      t.spans[rank].push_back(measured.spans[rank][static_cast<std::size_t>(step)]);
    }
    cal.step_ms.push_back(ms);
    ++t.steps;
  }
  if (4 * (measured.steps - t.steps) > measured.steps) {
    throw InputError(measured.source + ": " + std::to_string(measured.steps - t.steps) + " of " +
                     std::to_string(measured.steps) + " timed steps took more than " +
                     std::to_string(std::llround(kOutlierStepFactor)) + "x the median step (" + dropped +
                     "): too noisy to fit; measure on an idle machine or under `chrt -f 1`");
  }
  if (!dropped.empty()) {
    cal.notes.push_back("left out of the fit, each more than " + std::to_string(std::llround(kOutlierStepFactor)) +
                        "x the median step of " + std::to_string(std::llround(median_ms * 1000)) + " us: " + dropped);
  }
  const double mean = std::accumulate(cal.step_ms.begin(), cal.step_ms.end(), 0.0) / static_cast<double>(t.steps);
  double sq = 0;
  for (double v : cal.step_ms) sq += (v - mean) * (v - mean);
  cal.step_cv = mean > 0 ? std::sqrt(sq / static_cast<double>(t.steps)) / mean : 0;
  if (cal.step_cv > kMaxStepCv) {
    throw InputError(t.source + ": the run's step times vary by " + std::to_string(std::llround(cal.step_cv * 100)) +
                     "% (coefficient of variation; at most " + std::to_string(std::llround(kMaxStepCv * 100)) +
                     "% fits): too noisy to fit; measure on an idle machine or under `chrt -f 1`");
  }
  if (t.ranks != static_cast<int>(c.position_device.size())) {
    throw InputError(t.source + ": the trace has " + std::to_string(t.ranks) + " ranks but the plan has " +
                     std::to_string(c.position_device.size()) + " pipeline positions");
  }
  const Samples s = gather(t, c, o.loss_in_profile);
  if (s.ops.empty()) throw InputError(t.source + ": the trace has no op spans (forward, backward, ...)");
  cal.runtime.framework = o.framework.empty() ? t.name : o.framework;
  cal.runtime.schedule_class = o.schedule_class;
  fit_actions(s, cal);
  fit_op_terms(s, c, cal);
  fit_messages(s, cal);
  fit_step_terms(s, cal);
  if (s.issues.empty()) cal.notes.push_back("the trace has no p2p_issue spans: message issue costs not fitted (0)");
  const std::string from = "pipescope calibrate of " + t.source;
  for (const char* key : {"action_us", "op_us", "message", "step", "split_backward"}) cal.runtime.sources[key] = from;
  if (!s.losses.empty()) cal.runtime.sources["loss_us"] = from;
  // What is written must read back: a term outside a runtime file's ranges (an hour per
  // action) says the run cannot be fitted, not that the runtime is that slow.
  try {
    runtime_costs_from_json(JsonReader::from_text(runtime_costs_to_json(cal.runtime).dump(), "the fitted runtime"));
  } catch (const InputError& e) {
    throw InputError(t.source + ": the fit gives a term out of range (" + e.what() +
                     "): the run is too short or too irregular to fit");
  }
  return cal;
}

}  // namespace pipescope
