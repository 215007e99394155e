// --inject-fault parsing and the JSON form of a worker's records (sent by MPI ranks to rank 0).
#include "exec/runtime/run_types.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <sstream>
#include <thread>
#include <vector>

#include "core/error.h"

namespace pipescope::exec {

int usable_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

void pin_current_thread(int i) {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return;
  std::vector<int> cores;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &allowed)) cores.push_back(c);
  }
  if (cores.empty()) return;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cores[static_cast<std::size_t>(i) % cores.size()], &one);
  pthread_setaffinity_np(pthread_self(), sizeof one, &one);  // best effort: a refusal leaves placement to the OS
}

std::string to_string(Transport transport) { return transport == Transport::Mpi ? "mpi" : "threads"; }

Transport parse_transport(const std::string& name) {
  if (name == "threads") return Transport::Threads;
  if (name == "mpi") return Transport::Mpi;
  throw InputError("--transport: expected threads or mpi, got \"" + name + "\"");
}

std::string to_string(WaitMode wait) {
  switch (wait) {
    case WaitMode::Spin: return "spin";
    case WaitMode::Block: return "block";
    case WaitMode::Auto: break;
  }
  return "auto";
}

WaitMode parse_wait_mode(const std::string& name) {
  if (name == "auto") return WaitMode::Auto;
  if (name == "spin") return WaitMode::Spin;
  if (name == "block") return WaitMode::Block;
  throw InputError("--wait: expected auto, spin or block, got \"" + name + "\"");
}

std::string to_string(PinMode pin) {
  switch (pin) {
    case PinMode::On: return "on";
    case PinMode::Off: return "off";
    case PinMode::Auto: break;
  }
  return "auto";
}

PinMode parse_pin_mode(const std::string& name) {
  if (name == "auto") return PinMode::Auto;
  if (name == "on") return PinMode::On;
  if (name == "off") return PinMode::Off;
  throw InputError("--pin: expected auto, on or off, got \"" + name + "\"");
}

bool RunOptions::pin_threads(int devices_here) const {
  if (pin == PinMode::Auto) return devices_here <= usable_cores();
  return pin == PinMode::On;
}

bool RunOptions::spin_waits(int devices_here) const {
  if (wait == WaitMode::Auto) return devices_here <= usable_cores();
  return wait == WaitMode::Spin;
}

FaultSpec parse_fault(const std::string& text) {
  std::vector<std::string> parts;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ':')) parts.push_back(item);
  auto bad = [&] {
    return InputError("--inject-fault: expected STAGE[/REPLICA]:OP:MICROBATCH[:crash|:drop] with OP one of forward, "
                      "backward, backward_input, backward_weight, recompute; got \"" + text + "\"");
  };
  if (parts.size() < 3 || parts.size() > 4) throw bad();
  FaultSpec f;
  try {
    const std::size_t slash = parts[0].find('/');
    std::size_t used = 0, used_replica = 0;
    f.stage = std::stoi(parts[0].substr(0, slash), &used);
    if (slash != std::string::npos) f.replica = std::stoi(parts[0].substr(slash + 1), &used_replica);
    if (used != std::min(slash, parts[0].size()) ||
        (slash != std::string::npos && used_replica != parts[0].size() - slash - 1)) {
      throw bad();
    }
    f.microbatch = std::stoi(parts[2]);
  } catch (const std::exception&) {
    throw bad();
  }
  const std::vector<OpKind> kinds = {OpKind::Forward, OpKind::Backward, OpKind::BackwardInput,
                                     OpKind::BackwardWeight, OpKind::Recompute};
  bool found = false;
  for (OpKind k : kinds) {
    if (to_string(k) == parts[1]) {
      f.kind = k;
      found = true;
    }
  }
  if (!found || f.stage < 0 || f.replica < 0 || f.microbatch < 0) throw bad();
  if (parts.size() == 4) {
    if (parts[3] != "crash" && parts[3] != "drop") throw bad();
    f.crash = parts[3] == "crash";
    f.drop = parts[3] == "drop";
  }
  return f;
}

Json worker_result_to_json(const WorkerResult& r) {
  Json steps = Json::array();
  for (const StepRecord& s : r.steps) {
    Json ops = Json::array(), transfers = Json::array(), memory = Json::array();
    for (const OpRecord& o : s.ops) {
      ops.push_back({static_cast<int>(o.kind), o.stage, o.microbatch, o.start_ns, o.end_ns, o.cpu_ns, o.version});
    }
    Json updates = Json::array();
    for (const UpdateRecord& u : s.updates) updates.push_back({u.stage, u.microbatch, u.start_ns, u.end_ns});
    for (const TransferRecord& t : s.transfers) {
      transfers.push_back({t.from_device, t.to_device, t.stage, t.microbatch, t.start_ns, t.end_ns});
    }
    for (const MemorySample& m : s.memory) {
      memory.push_back({m.time_ns, m.activation_bytes, m.transient_bytes, m.weight_version_bytes});
    }
    steps.push_back({{"origin", s.origin_ns}, {"ops", ops}, {"transfers", transfers}, {"memory", memory},
                     {"optimizer", s.optimizer_ns}, {"optimizer_start", s.optimizer_start_ns}, {"allreduce", {s.allreduce_start_ns, s.allreduce_end_ns}}, {"loss", s.loss}, {"peak_act", s.peak_activation_bytes},
                     {"peak_total", s.peak_total_bytes}, {"updates", updates}});
  }
  return {{"device", r.device}, {"static", r.static_bytes},
          {"static_parts", {r.weight_bytes, r.gradient_bytes, r.optimizer_bytes}},
          {"grad_error", r.max_gradient_error}, {"parameter_hash", r.parameter_hash},
          {"versions", {r.weight_versions, r.weight_version_bytes}}, {"steps", steps}};
}

WorkerResult worker_result_from_json(const Json& j) {
  WorkerResult r;
  r.device = j.at("device").get<int>();
  r.static_bytes = j.at("static").get<int64_t>();
  r.weight_bytes = j.at("static_parts")[0].get<int64_t>();
  r.gradient_bytes = j.at("static_parts")[1].get<int64_t>();
  r.optimizer_bytes = j.at("static_parts")[2].get<int64_t>();
  r.max_gradient_error = j.at("grad_error").get<double>();
  r.parameter_hash = j.at("parameter_hash").get<uint64_t>();
  r.weight_versions = j.at("versions")[0].get<int>();
  r.weight_version_bytes = j.at("versions")[1].get<int64_t>();
  for (const Json& s : j.at("steps")) {
    StepRecord rec;
    rec.origin_ns = s.at("origin").get<int64_t>();
    for (const Json& o : s.at("ops")) {
      rec.ops.push_back({static_cast<OpKind>(o[0].get<int>()), o[1].get<int>(), o[2].get<int>(),
                         o[3].get<int64_t>(), o[4].get<int64_t>(), o[5].get<int64_t>(), o[6].get<int>()});
    }
    for (const Json& t : s.at("transfers")) {
      rec.transfers.push_back({t[0].get<int>(), t[1].get<int>(), t[2].get<int>(), t[3].get<int>(),
                               t[4].get<int64_t>(), t[5].get<int64_t>()});
    }
    for (const Json& m : s.at("memory")) {
      rec.memory.push_back({0, m[0].get<int64_t>(), m[1].get<int64_t>(), m[2].get<int64_t>(), m[3].get<int64_t>()});
    }
    for (const Json& u : s.at("updates")) {
      rec.updates.push_back({u[0].get<int>(), u[1].get<int>(), u[2].get<int64_t>(), u[3].get<int64_t>()});
    }
    rec.optimizer_ns = s.at("optimizer").get<int64_t>();
    rec.optimizer_start_ns = s.at("optimizer_start").get<int64_t>();
    rec.allreduce_start_ns = s.at("allreduce")[0].get<int64_t>();
    rec.allreduce_end_ns = s.at("allreduce")[1].get<int64_t>();
    rec.loss = s.at("loss").get<double>();
    rec.peak_activation_bytes = s.at("peak_act").get<int64_t>();
    rec.peak_total_bytes = s.at("peak_total").get<int64_t>();
    r.steps.push_back(std::move(rec));
  }
  return r;
}

}  // namespace pipescope::exec
