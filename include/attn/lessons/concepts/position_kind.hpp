#pragma once
// What the lessons' runs know of word order: nothing, sinusoidal encodings added to x, or RoPE
// on q and k (positions_lesson.hpp says why each matters). Apart from the lesson so that a
// caller naming the kind (the demo's options) need not include the lesson.
#include <string>

namespace attn {

enum class PositionKind { none, sinusoidal, rope };
std::string position_kind_name(PositionKind kind);
// "none", "sinusoidal" or "rope"; InputError naming `field` otherwise.
PositionKind parse_position_kind(const std::string& name, const std::string& field);

}  // namespace attn
