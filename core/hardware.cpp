#include "core/hardware.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace pipescope {

int64_t Link::busy_ns(int64_t bytes) const {
  if (bandwidth_gb_per_s <= 0 || bytes <= 0) return 0;
  return std::llround(static_cast<double>(bytes) / bandwidth_gb_per_s);  // bytes / (GB/s) = ns
}

int64_t Link::latency_ns() const { return std::llround(latency_us * 1000.0); }

double Hardware::device_speed(int device) const {
  return speed.empty() ? 1.0 : speed[static_cast<std::size_t>(device) % speed.size()];
}

const Link& Hardware::link_between(int from, int to) const {
  if (devices_per_node > 0 && from / devices_per_node != to / devices_per_node) return inter_node;
  return link;
}

Link Hardware::ring_link(const std::vector<int>& devices) const {
  Link ring;
  const std::size_t r = devices.size();
  for (std::size_t k = 0; k < r && r > 1; ++k) {
    const Link& hop = link_between(devices[k], devices[(k + 1) % r]);
    if (hop.bandwidth_gb_per_s > 0 &&
        (ring.bandwidth_gb_per_s == 0 || hop.bandwidth_gb_per_s < ring.bandwidth_gb_per_s)) {
      ring.bandwidth_gb_per_s = hop.bandwidth_gb_per_s;
    }
    ring.latency_us = std::max(ring.latency_us, hop.latency_us);
  }
  return ring;
}

Hardware Hardware::ideal(int devices) {
  Hardware h;
  h.name = "ideal (free communication, unbounded memory)";
  h.devices = devices;
  return h;
}

namespace {

Link link_from_json(const JsonReader& r) {
  Link link;
  link.bandwidth_gb_per_s = r["bandwidth_gb_per_s"].as_double(1e-6, 1e9);
  link.latency_us = r["latency_us"].as_double(0.0, 1e9);
  return link;
}

Json link_to_json(const Link& l) {
  return {{"bandwidth_gb_per_s", l.bandwidth_gb_per_s}, {"latency_us", l.latency_us}};
}

}  // namespace

std::string to_string(P2p p2p) {
  switch (p2p) {
    case P2p::Overlapped: return "overlapped";
    case P2p::Blocking: return "blocking";
    case P2p::Batched: return "batched";
  }
  return "overlapped";
}

P2p parse_p2p(const std::string& name) {
  if (name == "overlapped") return P2p::Overlapped;
  if (name == "blocking") return P2p::Blocking;
  if (name == "batched") return P2p::Batched;
  throw InputError("--p2p: expected overlapped, blocking or batched, got \"" + name + "\"");
}

P2p p2p_from_json(const JsonReader& field) {
  const std::string name = field.as_string();
  if (name != "overlapped" && name != "blocking" && name != "batched") {
    field.fail("expected \"overlapped\", \"blocking\" or \"batched\", got \"" + name + "\"");
  }
  return parse_p2p(name);
}

Hardware hardware_from_json(const JsonReader& r) {
  r.expect_format("pipescope.hardware");
  Hardware h;
  h.source = r.source();
  h.name = r["name"].as_string();
  h.devices = static_cast<int>(r["devices"].as_int(1, 1 << 20));
  h.memory_bytes = r["memory_bytes"].as_int(1, int64_t{1} << 50);
  h.link = link_from_json(r["link"]);
  if (r.has("nodes")) {
    JsonReader nodes = r["nodes"];
    h.devices_per_node = static_cast<int>(nodes["devices_per_node"].as_int(1, h.devices));
    h.inter_node = link_from_json(nodes["link"]);
  }
  if (r.has("speed")) {
    JsonReader speed = r["speed"];
    h.speed = speed.as_doubles(1e-6);
    if (static_cast<int>(h.speed.size()) != h.devices) {
      speed.fail("expected " + std::to_string(h.devices) + " values (one per device), got " +
                 std::to_string(h.speed.size()));
    }
  }
  if (r.has("p2p")) h.p2p = p2p_from_json(r["p2p"]);
  if (r.has("host_link")) {
    const JsonReader host = r["host_link"];
    h.host_link = HostLink{link_from_json(host["to_host"]), link_from_json(host["to_device"])};
    if (host.has("memory_bytes")) h.host_link->memory_bytes = host["memory_bytes"].as_int(1, int64_t{1} << 50);
    if (host.has("node_memory_bytes")) {
      h.host_link->node_memory_bytes = host["node_memory_bytes"].as_int(1, int64_t{1} << 50);
    }
  }
  return h;
}

Hardware load_hardware(const std::string& path) {
  return hardware_from_json(JsonReader::from_file(path));
}

Json hardware_to_json(const Hardware& h) {
  Json out = {{"format", "pipescope.hardware"}, {"version", 1},         {"name", h.name},
              {"devices", h.devices},           {"memory_bytes", h.memory_bytes},
              {"link", link_to_json(h.link)}};
  if (h.devices_per_node > 0) {
    out["nodes"] = {{"devices_per_node", h.devices_per_node}, {"link", link_to_json(h.inter_node)}};
  }
  if (!h.speed.empty()) out["speed"] = h.speed;
  if (h.p2p) out["p2p"] = to_string(*h.p2p);
  if (h.host_link) {
    out["host_link"] = {{"to_host", link_to_json(h.host_link->to_host)}, {"to_device", link_to_json(h.host_link->to_device)}};
    if (h.host_link->memory_bytes > 0) out["host_link"]["memory_bytes"] = h.host_link->memory_bytes;
    if (h.host_link->node_memory_bytes > 0) out["host_link"]["node_memory_bytes"] = h.host_link->node_memory_bytes;
  }
  return out;
}

}  // namespace pipescope
