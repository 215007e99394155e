// The pipescope.runtime file: microseconds in the file, integer nanoseconds inside
// (core/runtime_costs.h). Reading refuses what the simulator could not charge: negative
// or absurd times (over an hour per action: kMaxTermUs), unknown keys (a misspelt field
// would otherwise charge nothing, silently), unknown op kinds.
#include "core/runtime_costs.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>

#include "core/data_dir.h"
#include "core/error.h"
#include "core/hardware.h"

namespace pipescope {
namespace {

constexpr double kMaxTermUs = 3.6e9;         // one hour
constexpr double kMaxUsPerMib = 3.6e9;       // one hour per MiB
constexpr double kBytesPerMib = 1024.0 * 1024.0;
constexpr std::size_t kOpKinds = 5;  // OpKind's values, F B I W R (op_letter: the file's keys)
std::string kind_key(std::size_t k) { return std::string(1, op_letter(static_cast<OpKind>(k))); }

void refuse_unknown_keys(const JsonReader& r, std::initializer_list<const char*> known) {
  if (!r.json().is_object()) r.fail("expected an object");
  const std::set<std::string> allowed(known.begin(), known.end());
  for (const auto& [key, value] : r.json().items()) {
    if (!allowed.count(key)) {
      std::string list;
      for (const char* k : known) list += std::string(list.empty() ? "" : ", ") + k;
      r.fail("unknown key \"" + key + "\" (expected one of: " + list + ")");
    }
  }
}

int64_t us_field(const JsonReader& r, const char* key, double min_us = 0.0) {
  return r.has(key) ? std::llround(r[key].as_double(min_us, kMaxTermUs) * 1000.0) : 0;
}

double ns_per_byte_field(const JsonReader& r, const char* key) {
  return r.has(key) ? r[key].as_double(0.0, kMaxUsPerMib) * 1000.0 / kBytesPerMib : 0.0;
}

Json us(int64_t ns) { return json_number(static_cast<double>(ns) / 1000.0); }
Json us_per_mib(double ns_per_byte) { return json_number(ns_per_byte * kBytesPerMib / 1000.0); }

int64_t issue(int64_t fixed_ns, double per_byte, int64_t bytes) {
  return fixed_ns + std::llround(per_byte * static_cast<double>(std::max<int64_t>(bytes, 0)));
}

}  // namespace

bool RuntimeCosts::any() const {
  const auto positive = [](int64_t v) { return v > 0; };
  const auto nonzero = [](int64_t v) { return v != 0; };
  return std::any_of(action_ns.begin(), action_ns.end(), positive) || std::any_of(op_ns.begin(), op_ns.end(), nonzero) ||
         loss_ns > 0 ||
         send_issue_ns > 0 || send_issue_ns_per_byte > 0 || recv_issue_ns > 0 || recv_issue_ns_per_byte > 0 ||
         prologue_ns > 0 || epilogue_ns > 0 || last_stage_epilogue_ns > 0 || optimizer_ns_per_parameter_byte > 0 || optimizer_ns != 0 ||
         first_stage_split != FirstStageSplit::AsProfiled || !input_pass_frees || local_hop_shares_tensor;
}

int64_t RuntimeCosts::send_issue(int64_t bytes) const { return issue(send_issue_ns, send_issue_ns_per_byte, bytes); }
int64_t RuntimeCosts::recv_issue(int64_t bytes) const { return issue(recv_issue_ns, recv_issue_ns_per_byte, bytes); }

RuntimeCosts runtime_costs_from_json(const JsonReader& r) {
  r.expect_format("pipescope.runtime");
  refuse_unknown_keys(r, {"format", "version", "framework", "schedule_class", "action_us", "op_us", "loss_us", "message", "p2p",
                          "step", "split_backward", "memory", "sources", "fit"});
  RuntimeCosts rt;
  if (r.has("framework")) rt.framework = r["framework"].as_string();
  if (r.has("schedule_class")) rt.schedule_class = r["schedule_class"].as_string();
  if (r.has("action_us")) {
    const JsonReader a = r["action_us"];
    refuse_unknown_keys(a, {"F", "B", "I", "W", "R"});
    for (std::size_t k = 0; k < kOpKinds; ++k) rt.action_ns[k] = us_field(a, kind_key(k).c_str());
  }
  if (r.has("op_us")) {
    const JsonReader a = r["op_us"];
    refuse_unknown_keys(a, {"F", "B", "I", "W", "R"});
    for (std::size_t k = 0; k < kOpKinds; ++k) rt.op_ns[k] = us_field(a, kind_key(k).c_str(), -kMaxTermUs);
  }
  rt.loss_ns = us_field(r, "loss_us");
  if (r.has("message")) {
    const JsonReader m = r["message"];
    refuse_unknown_keys(m, {"send_issue_us", "send_issue_us_per_mib", "recv_issue_us", "recv_issue_us_per_mib"});
    rt.send_issue_ns = us_field(m, "send_issue_us");
    rt.send_issue_ns_per_byte = ns_per_byte_field(m, "send_issue_us_per_mib");
    rt.recv_issue_ns = us_field(m, "recv_issue_us");
    rt.recv_issue_ns_per_byte = ns_per_byte_field(m, "recv_issue_us_per_mib");
  }
  if (r.has("p2p")) rt.p2p = p2p_from_json(r["p2p"]);
  if (r.has("step")) {
    const JsonReader s = r["step"];
    refuse_unknown_keys(s, {"prologue_us", "epilogue_us", "last_stage_epilogue_us", "optimizer_us", "optimizer_us_per_mib"});
    rt.prologue_ns = us_field(s, "prologue_us");
    rt.epilogue_ns = us_field(s, "epilogue_us");
    rt.last_stage_epilogue_ns = us_field(s, "last_stage_epilogue_us");
    rt.optimizer_ns_per_parameter_byte = ns_per_byte_field(s, "optimizer_us_per_mib");
    rt.optimizer_ns = us_field(s, "optimizer_us", -kMaxTermUs);
  }
  if (r.has("split_backward")) {
    const JsonReader sb = r["split_backward"];
    refuse_unknown_keys(sb, {"first_stage"});
    if (sb.has("first_stage")) {
      const JsonReader f = sb["first_stage"];
      const std::string v = f.as_string();
      if (v == "as_profiled") {
        rt.first_stage_split = FirstStageSplit::AsProfiled;
      } else if (v == "weight_pass_runs_all") {
        rt.first_stage_split = FirstStageSplit::WeightPassRunsAll;
      } else {
        f.fail("expected \"as_profiled\" or \"weight_pass_runs_all\", got \"" + v + "\"");
      }
    }
  }
  if (r.has("memory")) {
    const JsonReader m = r["memory"];
    refuse_unknown_keys(m, {"input_pass_frees", "local_hop_shares_tensor"});
    if (m.has("input_pass_frees")) rt.input_pass_frees = m["input_pass_frees"].as_bool();
    if (m.has("local_hop_shares_tensor")) rt.local_hop_shares_tensor = m["local_hop_shares_tensor"].as_bool();
  }
  if (r.has("sources")) {
    const JsonReader s = r["sources"];
    if (!s.json().is_object()) s.fail("expected an object of strings");
    for (const auto& [key, value] : s.json().items()) rt.sources[key] = s[key].as_string();
  }
  if (r.has("fit")) {
    if (!r["fit"].json().is_object()) r["fit"].fail("expected an object");
    rt.fit = r["fit"].json();
  }
  return rt;
}

Json runtime_costs_to_json(const RuntimeCosts& rt) {
  Json out = {{"format", "pipescope.runtime"}, {"version", 1}, {"framework", rt.framework},
              {"schedule_class", rt.schedule_class}};
  Json actions = Json::object();
  for (std::size_t k = 0; k < kOpKinds; ++k) actions[kind_key(k)] = us(rt.action_ns[k]);
  out["action_us"] = actions;
  Json ops = Json::object();
  for (std::size_t k = 0; k < kOpKinds; ++k) ops[kind_key(k)] = us(rt.op_ns[k]);
  out["op_us"] = ops;
  out["loss_us"] = us(rt.loss_ns);
  out["message"] = {{"send_issue_us", us(rt.send_issue_ns)},
                    {"send_issue_us_per_mib", us_per_mib(rt.send_issue_ns_per_byte)},
                    {"recv_issue_us", us(rt.recv_issue_ns)},
                    {"recv_issue_us_per_mib", us_per_mib(rt.recv_issue_ns_per_byte)}};
  if (rt.p2p) out["p2p"] = to_string(*rt.p2p);
  out["step"] = {{"prologue_us", us(rt.prologue_ns)},
                 {"epilogue_us", us(rt.epilogue_ns)},
                 {"last_stage_epilogue_us", us(rt.last_stage_epilogue_ns)},
                 {"optimizer_us", us(rt.optimizer_ns)},
                 {"optimizer_us_per_mib", us_per_mib(rt.optimizer_ns_per_parameter_byte)}};
  out["split_backward"] = {
      {"first_stage", rt.first_stage_split == FirstStageSplit::WeightPassRunsAll ? "weight_pass_runs_all" : "as_profiled"}};
  out["memory"] = {{"input_pass_frees", rt.input_pass_frees}, {"local_hop_shares_tensor", rt.local_hop_shares_tensor}};
  if (!rt.sources.empty()) out["sources"] = rt.sources;
  if (!rt.fit.empty()) out["fit"] = rt.fit;
  return out;
}

int64_t input_pass_freed_bytes(int64_t freed, int64_t loss_bytes, bool first_stage, const RuntimeCosts* runtime) {
  if (!runtime) return freed;
  if (runtime->first_stage_split == FirstStageSplit::WeightPassRunsAll && first_stage) return 0;  // its I ran nothing
  if (!runtime->input_pass_frees) return std::min(freed, loss_bytes);
  return freed;
}

std::string runtime_note(const RuntimeCosts& rt) {
  const auto u = [](int64_t ns) { return std::to_string(std::llround(static_cast<double>(ns) / 1000.0)); };
  std::string out = "runtime costs of " + (rt.framework.empty() ? std::string("an unnamed runtime") : rt.framework) +
                    (rt.schedule_class.empty() ? "" : " (" + rt.schedule_class + ")") +
                    " on each position's track: per action F " + u(rt.action_ns[0]) + ", B " + u(rt.action_ns[1]) +
                    ", I " + u(rt.action_ns[2]) + ", W " + u(rt.action_ns[3]) + " us between ops, F " + u(rt.op_ns[0]) + ", B " + u(rt.op_ns[1]) +
                    ", I " + u(rt.op_ns[2]) + ", W " + u(rt.op_ns[3]) + " us added to the op; per message issued " +
                    u(rt.send_issue_ns) + " us to send, " + u(rt.recv_issue_ns) + " us to receive; per step " +
                    u(rt.prologue_ns) + " us before the first op, " + u(rt.epilogue_ns) + " us after the last";
  if (rt.loss_ns > 0) out += "; the loss " + u(rt.loss_ns) + " us after each forward of the last stage";
  if (rt.first_stage_split == FirstStageSplit::WeightPassRunsAll) {
    out += "; on the first stage I does nothing and W runs the whole backward";
  }
  if (!rt.input_pass_frees) out += "; I frees nothing: a micro-batch's stash lives until its W";
  if (rt.local_hop_shares_tensor) out += "; a hop between stages on one device passes the tensor itself, held once";
  if (rt.fit.contains("residual_us")) out += " (fitted by pipescope calibrate)";
  return out;
}

std::string bundled_runtime_names() {
  namespace fs = std::filesystem;
  const std::string dir = data_dir("profiles/runtimes");
  std::vector<std::string> names;
  std::error_code ec;
  if (!dir.empty()) {
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      if (e.path().extension() == ".json") names.push_back(e.path().stem().string());
    }
  }
  std::sort(names.begin(), names.end());
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out.empty() ? "(none bundled)" : out;
}

RuntimeCosts load_runtime_costs(const std::string& path_or_name, const std::string& field) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const auto read = [](const std::string& path, const std::string& name) {
    RuntimeCosts rt = runtime_costs_from_json(JsonReader::from_file(path));
    rt.path = path;
    rt.bundled_name = name;
    return rt;
  };
  if (fs::exists(path_or_name, ec)) return read(path_or_name, "");
  const bool bare = path_or_name.find('/') == std::string::npos;  // a name ("torch-2.13-gloo"), not a path
  const std::string dir = data_dir("profiles/runtimes");
  if (bare && !path_or_name.empty() && !dir.empty() && fs::exists(dir + "/" + path_or_name + ".json", ec)) {
    return read(dir + "/" + path_or_name + ".json", path_or_name);
  }
  throw InputError(field + ": \"" + path_or_name + "\" is neither a file nor a bundled runtime (bundled: " +
                   bundled_runtime_names() + ")");
}

std::string runtime_reference(const RuntimeCosts& rt, const std::string& plan_file) {
  namespace fs = std::filesystem;
  if (!rt.bundled_name.empty()) return rt.bundled_name;
  if (rt.path.empty()) throw InputError("runtime: built in code, so a plan file cannot name it");
  const fs::path folder = fs::absolute(plan_file).parent_path().lexically_normal();
  return fs::absolute(rt.path).lexically_normal().lexically_relative(folder).string();
}

}  // namespace pipescope
