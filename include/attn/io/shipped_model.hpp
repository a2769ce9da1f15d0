#pragma once
// The trained toy model attn-cli carries inside it, so that the default demo shows what training
// makes of random projections: a previous-token head and induction heads (Olsson et al. 2022).
// It is data/models/induction/ in the repository, embedded at build time, and exactly what
// kShippedModelCommand writes to train-out/model/ on a CPU with the flash ISA and BLAS core in
// data/models/induction/provenance.json (a test retrains it and compares).
#include "attn/engine/models/toy_model.hpp"

namespace attn {

inline constexpr const char* kShippedModelName = "attn-cli's trained toy model";
inline constexpr const char* kShippedModelCommand = "attn-cli train --no-timing";

// Parsed from the embedded bytes on each call (a few hundred microseconds).
ToyModel shipped_toy_model();

}  // namespace attn
