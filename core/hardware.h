// The devices a plan runs on: how many, their memory, how fast each computes
// (`speed` divides compute times; 2.0 = twice as fast) and the links between them.
// A transfer of b bytes over a link takes latency + b / bandwidth; the directed link
// is busy for the b / bandwidth part only. Devices d and e share a node when
// d / devices_per_node == e / devices_per_node; otherwise `inter_node` joins them.
// `host_link` (optional) joins each device to host memory, one link each way per device
// (activation offload, core/offload.h); the two directions are independent.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/json_reader.h"
#include "core/p2p.h"

namespace pipescope {

struct Link {
  double bandwidth_gb_per_s = 0;  // 1 GB = 1e9 bytes; 0 = infinitely fast
  double latency_us = 0;
  // Integer nanoseconds the link is busy for `bytes`, and the latency on top.
  int64_t busy_ns(int64_t bytes) const;
  int64_t latency_ns() const;
};

// A device's own link to host memory: to_host (device -> host, an offload) and to_device
// (host -> device, a reload). Every device has its own pair (PCIe x16 or NVLink-C2C).
// Host memory for offloaded activations: `memory_bytes` per device, and/or
// `node_memory_bytes` per node (shared by the node's devices); 0 = unbounded.
struct HostLink {
  Link to_host;
  Link to_device;
  int64_t memory_bytes = 0;
  int64_t node_memory_bytes = 0;
};

struct Hardware {
  std::string name;
  int devices = 1;
  int64_t memory_bytes = 0;      // per device; 0 = unbounded
  Link link;                     // within a node
  int devices_per_node = 0;      // 0: all devices share one node
  Link inter_node;
  std::vector<double> speed;     // empty: all 1.0
  std::optional<P2p> p2p;        // "p2p": how the runtime's transfers meet compute (absent: unsaid)
  std::optional<HostLink> host_link;  // "host_link": per device, to host memory and back (absent: none)
  std::string source;

  double device_speed(int device) const;
  const Link& link_between(int from, int to) const;
  // A ring over `devices` (d0 -> d1 -> ... -> d0) runs at its slowest hop: the
  // smallest bandwidth (0 only if every hop is free) and the largest latency.
  Link ring_link(const std::vector<int>& devices) const;

  // No hardware file: free communication, unbounded memory, `devices` devices.
  static Hardware ideal(int devices);
};

Hardware load_hardware(const std::string& path);
Hardware hardware_from_json(const JsonReader& reader);
// The "p2p" field of a hardware or plan file; fails naming the field for another value.
P2p p2p_from_json(const JsonReader& field);
Json hardware_to_json(const Hardware& hardware);

}  // namespace pipescope
