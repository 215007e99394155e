// Reads torch.profiler traces into the bridge's trace form (sim/kineto_trace.h): each
// rank's events become the bridge's spans, written as one Chrome trace, and
// read_measured_trace reads that, so one reader checks every invariant.
#include "sim/kineto_trace.h"

#include <algorithm>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <regex>

#include "core/error.h"
#include "core/limits.h"

namespace pipescope {
namespace {

constexpr double kKinetoMaxUs = 1e16;  // Kineto's timestamps are microseconds since an epoch

struct KinetoEvent {
  std::string name;
  bool cpu_op = false;  // else a user_annotation
  double start = 0, end = 0;  // us
  int64_t bytes = 0;          // c10d::send / recv_ with recorded shapes
};

bool is_issue(const KinetoEvent& e) { return e.cpu_op && (e.name == "c10d::send" || e.name == "c10d::recv_"); }
bool within(const KinetoEvent& inner, const KinetoEvent& outer) { return inner.start >= outer.start && inner.end <= outer.end; }

int64_t dtype_bytes(const std::string& type) {
  static const std::map<std::string, int64_t> sizes = {
      {"float", 4},      {"double", 8},     {"c10::Half", 2}, {"c10::BFloat16", 2}, {"long int", 8}, {"int", 4},
      {"short int", 2},  {"bool", 1},       {"unsigned char", 1}, {"signed char", 1}, {"c10::Float8_e4m3fn", 1},
      {"c10::Float8_e5m2", 1}};
  const auto it = sizes.find(type);
  return it == sizes.end() ? 0 : it->second;
}

// The first input tensor's bytes from "Input Dims" / "Input type" (record_shapes=True).
int64_t message_bytes(const Json& args) {
  if (!args.is_object() || !args.contains("Input Dims") || !args.contains("Input type")) return 0;
  const Json& dims = args["Input Dims"];
  const Json& types = args["Input type"];
  if (!dims.is_array() || dims.empty() || !dims[0].is_array() || !types.is_array() || types.empty() ||
      !types[0].is_string()) {
    return 0;
  }
  int64_t n = dtype_bytes(types[0].get<std::string>());
  for (const Json& d : dims[0]) {
    if (!d.is_number_integer() || d.get<int64_t>() < 0 || d.get<int64_t>() > (int64_t{1} << 40)) return 0;
    n *= d.get<int64_t>();
    if (n > (int64_t{1} << 50)) return 0;
  }
  return n;
}

struct TracedOp {
  const KinetoEvent* span;
  OpKind kind;
  int stage, microbatch;
  bool gpipe;  // Forward i / Backward i: its receives are posted inside it
};

struct KinetoRank {
  int rank = -1;
  std::string backend;
  std::map<int, KinetoEvent> steps;  // ProfilerStep#N by N
  std::vector<KinetoEvent> events;
};

KinetoRank read_kineto_rank(const JsonReader& r) {
  KinetoRank t;
  if (!is_kineto_trace(r)) r.fail("expected a torch.profiler trace (an object with \"traceEvents\" and \"distributedInfo\")");
  if (!r.has("distributedInfo")) {
    r.fail("no \"distributedInfo\": a torch.profiler trace of a distributed run names its rank there (profile after "
           "init_process_group)");
  }
  t.rank = static_cast<int>(r["distributedInfo"]["rank"].as_int(0, kMaxTraceRanks - 1));
  if (r["distributedInfo"].has("backend")) t.backend = r["distributedInfo"]["backend"].as_string();
  const std::vector<JsonReader> items = r["traceEvents"].items();
  for (std::size_t i = 0; i < items.size(); ++i) {
    const JsonReader& e = items[i];
    if (!e.json().is_object()) e.fail("expected an object");
    if (!e.has("ph") || !e["ph"].json().is_string() || e["ph"].as_string() != "X") continue;
    if (!e.has("cat") || !e["cat"].json().is_string()) continue;
    const std::string cat = e["cat"].as_string();
    if (cat != "user_annotation" && cat != "cpu_op") continue;
    KinetoEvent ev;
    ev.name = e["name"].as_string();
    ev.cpu_op = cat == "cpu_op";
    ev.start = e["ts"].as_double(-kKinetoMaxUs, kKinetoMaxUs);
    const double dur = e["dur"].as_double(0, kKinetoMaxUs);
    ev.end = ev.start + dur;
    if (is_issue(ev) && e.has("args")) {
      ev.bytes = message_bytes(e["args"].json());
    }
    if (!ev.cpu_op && ev.name.rfind("ProfilerStep#", 0) == 0) {
      int n = 0;
      try {
        n = std::stoi(ev.name.substr(13));
      } catch (const std::exception&) {
        e["name"].fail("expected ProfilerStep#<step>, got \"" + ev.name + "\"");
      }
      if (n < 0 || !t.steps.emplace(n, ev).second) e["name"].fail("\"" + ev.name + "\" twice or negative");
      continue;
    }
    t.events.push_back(std::move(ev));
  }
  if (t.steps.empty()) {
    r["traceEvents"].fail("no ProfilerStep#N spans: call prof.step() once per training step inside the profiler");
  }
  return t;
}

std::optional<TracedOp> traced_op(const KinetoEvent& e, int rank) {
  static const std::regex action(R"(PP:(\d{1,6})([FBIW])(\d{1,9}))");
  static const std::regex gpipe(R"((Forward|Backward) (\d{1,9}))");
  std::smatch m;
  if (e.cpu_op) return std::nullopt;
  if (std::regex_match(e.name, m, action)) {
    const char k = m[2].str()[0];
    const OpKind kind = k == 'F' ? OpKind::Forward
                        : k == 'B' ? OpKind::Backward
                        : k == 'I' ? OpKind::BackwardInput
                                   : OpKind::BackwardWeight;
    return TracedOp{&e, kind, std::stoi(m[1].str()), std::stoi(m[3].str()), false};
  }
  if (std::regex_match(e.name, m, gpipe)) {
    return TracedOp{&e, m[1].str() == "Forward" ? OpKind::Forward : OpKind::Backward, rank, std::stoi(m[2].str()), true};
  }
  return std::nullopt;
}

bool is_recv_issue(const KinetoEvent& e) { return e.cpu_op && e.name == "c10d::recv_"; }
bool is_completion(const KinetoEvent& e) {
  return !e.cpu_op && e.name.size() > 5 && e.name.compare(e.name.size() - 5, 5, ":recv") == 0 &&
         e.name.rfind("PP:", 0) != 0;
}
bool is_loss(const KinetoEvent& e) {
  return e.cpu_op && e.name.find("loss") != std::string::npos && e.name.find("backward") == std::string::npos;
}

// When the receive posted by `issue` completed: the end of the backend's recv annotation
// that starts inside it, else the issue's end (a synchronous receive).
double completion_of(const KinetoEvent& issue, const std::vector<const KinetoEvent*>& completions) {
  for (const KinetoEvent* c : completions) {
    if (c->start >= issue.start && c->start <= issue.end) return c->end;
  }
  return issue.end;
}

Json bridge_span(const std::string& cat, int rank, double start, double end, double origin, Json args) {
  return {{"ph", "X"}, {"cat", cat}, {"name", cat}, {"pid", 0}, {"tid", rank},
          {"ts", start - origin}, {"dur", std::max(0.0, end - start)}, {"args", std::move(args)}};
}

// The bridge-form spans of one rank, its steps renumbered from `first_step`.
void to_bridge_spans(const KinetoRank& t, int first_step, double origin, const std::string& source, Json& out) {
  std::vector<TracedOp> ops;
  std::vector<const KinetoEvent*> issues, completions, losses;
  std::map<std::tuple<int, char, int>, const KinetoEvent*> recv_actions;  // (stage, F|B, mb)
  static const std::regex recv_action(R"(PP:(\d{1,6})RECV_([FB])(\d{1,9}))");
  for (const KinetoEvent& e : t.events) {
    std::smatch m;
    if (const std::optional<TracedOp> op = traced_op(e, t.rank)) {
      ops.push_back(*op);
    } else if (is_issue(e)) {
      issues.push_back(&e);
    } else if (is_completion(e)) {
      completions.push_back(&e);
    } else if (is_loss(e)) {
      losses.push_back(&e);
    } else if (!e.cpu_op && std::regex_match(e.name, m, recv_action)) {
      recv_actions[{std::stoi(m[1].str()), m[2].str()[0], std::stoi(m[3].str())}] = &e;
    }
  }
  // Only the outermost loss op counts (cross_entropy_loss holds nll_loss): dropped once here.
  std::vector<const KinetoEvent*> outer_losses;
  for (const KinetoEvent* l : losses) {
    const bool outermost = std::none_of(losses.begin(), losses.end(), [&](const KinetoEvent* other) {
      return other != l && within(*l, *other) && (other->end - other->start) > (l->end - l->start);
    });
    if (outermost) outer_losses.push_back(l);
  }
  if (ops.empty()) {
    throw InputError(source + ": rank " + std::to_string(t.rank) +
                     ": no op spans (PP:<stage><F|B|I|W><mb> or Forward/Backward <mb>). torch records them for its "
                     "runtime-based schedule classes and ScheduleGPipe; Schedule1F1B records none: calibrate such a "
                     "run from `pipescope_torch run --trace`");
  }
  auto step_of = [&](const KinetoEvent& e) -> std::optional<int> {
    for (const auto& [n, s] : t.steps) {
      if (e.start >= s.start && e.start <= s.end) return n - first_step;
    }
    return std::nullopt;
  };
  auto emit = [&](const KinetoEvent& anchor, Json s) {
    const std::optional<int> step = step_of(anchor);
    if (!step) return;  // outside the recorded steps
    s["args"]["step"] = *step;
    out.push_back(std::move(s));
  };
  for (const auto& [n, s] : t.steps) {
    out.push_back(bridge_span("step", t.rank, s.start, s.end, origin, {{"step", n - first_step}}));
  }
  for (const KinetoEvent* i : issues) {
    const bool recv = is_recv_issue(*i);
    emit(*i, bridge_span("p2p_issue", t.rank, i->start, i->end, origin,
                  {{"sends", recv ? 0 : 1}, {"recvs", recv ? 1 : 0}, {"send_bytes", recv ? 0 : i->bytes},
                   {"recv_bytes", recv ? i->bytes : 0}}));
  }
  for (const TracedOp& op : ops) {
    const KinetoEvent& o = *op.span;
    // The receives this op consumes, and the end of their issue when it lies inside the op.
    double issued = o.start, completed = o.start;
    const KinetoEvent* posted_by = nullptr;
    if (!op.gpipe && op.kind != OpKind::BackwardWeight) {
      const auto it = recv_actions.find({op.stage, op.kind == OpKind::Forward ? 'F' : 'B', op.microbatch});
      if (it != recv_actions.end()) posted_by = it->second;
    }
    for (const KinetoEvent* i : issues) {
      if (!is_recv_issue(*i)) continue;
      if (op.gpipe ? within(*i, o) : (posted_by && within(*i, *posted_by))) {
        completed = std::max(completed, completion_of(*i, completions));
        if (within(*i, o)) issued = std::max(issued, i->end);
      }
    }
    const double wait_start = issued;
    const double wait_end = std::min(o.end, std::max(wait_start, completed));
    double core_end = o.end;
    const KinetoEvent* loss = nullptr;
    for (const KinetoEvent* i : issues) {
      if (!is_recv_issue(*i) && within(*i, o) && i->start >= wait_end) core_end = std::min(core_end, i->start);
    }
    if (op.kind == OpKind::Forward) {
      for (const KinetoEvent* l : outer_losses) {
        if (within(*l, o) && l->start >= wait_end && (!loss || l->start < loss->start)) loss = l;
      }
      if (loss) core_end = std::min(core_end, loss->start);
    }
    if (wait_end > wait_start) emit(o, bridge_span("p2p_wait", t.rank, wait_start, wait_end, origin, Json::object()));
    emit(o, bridge_span(to_string(op.kind), t.rank, wait_end, std::max(wait_end, core_end), origin,
                 {{"stage", op.stage}, {"microbatch", op.microbatch}}));
    if (loss) {
      emit(o, bridge_span("loss", t.rank, loss->start, loss->end, origin, {{"stage", op.stage}, {"microbatch", op.microbatch}}));
    }
  }
  for (const KinetoEvent& e : t.events) {
    if (e.cpu_op) continue;
    if (e.name.rfind("Optimizer.step#", 0) == 0) emit(e, bridge_span("optimizer", t.rank, e.start, e.end, origin, Json::object()));
    if (e.name.rfind("Optimizer.zero_grad#", 0) == 0) {
      emit(e, bridge_span("zero_grad", t.rank, e.start, e.end, origin, Json::object()));
    }
  }
}

}  // namespace

bool is_kineto_trace(const JsonReader& r) {
  return r.json().is_object() && r.has("traceEvents") && (r.has("schemaVersion") || r.has("distributedInfo"));
}

MeasuredTrace read_kineto_traces(const std::vector<JsonReader>& files) {
  if (files.empty()) throw InputError("--trace: expected one torch.profiler trace per rank");
  std::vector<KinetoRank> ranks(files.size());
  std::vector<std::string> rank_source(files.size());
  std::string source;
  for (std::size_t i = 0; i < files.size(); ++i) {
    KinetoRank t = read_kineto_rank(files[i]);
    if (t.rank >= static_cast<int>(files.size())) {
      files[i]["distributedInfo"]["rank"].fail("rank " + std::to_string(t.rank) + " in " + std::to_string(files.size()) +
                                               " files: give one trace per rank, ranks 0 to " +
                                               std::to_string(files.size() - 1));
    }
    if (ranks[t.rank].rank >= 0) {
      files[i]["distributedInfo"]["rank"].fail("rank " + std::to_string(t.rank) + " is also " + rank_source[t.rank] + "'s");
    }
    source += (i ? " + " : "") + files[i].source();
    rank_source[t.rank] = files[i].source();
    ranks[t.rank] = std::move(t);
  }
  // The steps every rank recorded, from the first of them.
  const std::map<int, KinetoEvent>& first = ranks[0].steps;
  const auto same_steps = [&](const std::map<int, KinetoEvent>& steps) {
    return std::equal(first.begin(), first.end(), steps.begin(), steps.end(),
                      [](const auto& x, const auto& y) { return x.first == y.first; });
  };
  for (const KinetoRank& t : ranks) {
    if (!same_steps(t.steps)) {
      throw InputError(rank_source[t.rank] + ": rank " + std::to_string(t.rank) + " recorded other ProfilerStep numbers than "
                       "rank 0 in " + rank_source[0] + " (profile the same steps on every rank)");
    }
  }
  const int first_step = first.begin()->first;
  double origin = std::numeric_limits<double>::max();
  for (const KinetoRank& t : ranks) origin = std::min(origin, t.steps.begin()->second.start);
  Json events = Json::array();
  events.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", 0},
                    {"args", {{"name", "torch.profiler" + (ranks[0].backend.empty() ? "" : " " + ranks[0].backend)}}}});
  for (const KinetoRank& t : ranks) to_bridge_spans(t, first_step, origin, rank_source[t.rank], events);
  const auto trace = std::make_shared<const Json>(Json{{"traceEvents", std::move(events)}});
  return read_measured_trace(JsonReader(trace, trace.get(), source, ""));
}

MeasuredTrace load_measured_traces(const std::vector<std::string>& paths) {
  if (paths.empty()) throw InputError("--trace: required");
  std::vector<JsonReader> files;
  for (const std::string& p : paths) files.push_back(JsonReader::from_file(p));
  if (files.size() == 1 && !is_kineto_trace(files[0])) return read_measured_trace(files[0]);
  for (const JsonReader& f : files) {
    if (!is_kineto_trace(f)) {
      f.fail("expected a torch.profiler trace like the others (several --trace files are one torch.profiler trace "
             "per rank; the bridge's trace is one file for every rank)");
    }
  }
  return read_kineto_traces(files);
}

}  // namespace pipescope
