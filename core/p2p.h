// How point-to-point transfers meet compute, a runtime property that a hardware file, a
// plan file or a --p2p flag may state (the flag wins, then the plan's, then the
// hardware's; absent everywhere: overlapped).
//   Overlapped: on links beside compute; the tensor leaves when its op ends and the
//     device runs on (Megatron-LM's default for the interleaved schedule, which
//     --no-overlap-p2p-communication turns off).
//   Blocking: batched isend/irecv waited on the compute stream (Megatron-LM's 1F1B, and
//     interleaved with --no-overlap-p2p-communication): a sender is busy until its tensor
//     has arrived, and an op that receives from another device starts no earlier than
//     its device's free time plus the transfer's time.
//   Batched: each end posts its side with the op boundary (torch's `_batch_p2p` and the
//     zero-bubble runtime: the sender's send after its op, the receiver's receive before
//     the op that consumes it, in one batched call each) and the transfer starts when both
//     have posted (gloo's rendezvous); the receiver waits for it before that op, the
//     sender runs on (its sends are waited at the step's end). Between the two above: a
//     transfer overlaps compute, but not compute the receiver is still doing.
#pragma once

#include <cstdint>
#include <string>

namespace pipescope {

enum class P2p : uint8_t { Overlapped, Blocking, Batched };
std::string to_string(P2p p2p);          // "overlapped", "blocking", "batched"
P2p parse_p2p(const std::string& name);  // throws InputError naming --p2p

}  // namespace pipescope
