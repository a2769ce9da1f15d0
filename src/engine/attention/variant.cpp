// Attention variants as descriptors (variant.hpp).
#include "attn/engine/attention/variant.hpp"

#include <cmath>
#include <string>

#include "attn/engine/core/error.hpp"

namespace attn {

bool AttentionMask::visible(std::size_t i, std::size_t j, std::size_t Lq, std::size_t Lk) const {
  const long p = long(i) + long(Lk) - long(Lq), key = long(j);
  bool ok = true;
  if (window) ok = key >= p - long((*window)[0]) && key <= p + long((*window)[1]);
  if (key < long(sinks)) ok = true;  // a sink is visible whatever the window says
  if (!segments_q.empty()) ok = ok && segments_q[i] == segments_k[j];
  if (prefix) ok = ok && (j < *prefix || j <= i);
  if (stride) ok = ok && key <= p && ((p - key) < long(stride) || (p - key) % long(stride) == 0);
  return ok;
}

Mask2 AttentionMask::allowed(std::size_t Lq, std::size_t Lk) const {
  Mask2 m = Mask2::from_shape({Lq, Lk});
  for (std::size_t i = 0; i < Lq; ++i)
    for (std::size_t j = 0; j < Lk; ++j) m(i, j) = visible(i, j, Lq, Lk);
  return m;
}

void AttentionMask::check(std::size_t Lq, std::size_t Lk) const {
  if (segments_q.size() != segments_k.size() && (segments_q.empty() || segments_k.empty()))
    throw InputError("segments: expected both \"q\" and \"k\"");
  if (!segments_q.empty() && segments_q.size() != Lq)
    throw InputError("segments.q: expected " + std::to_string(Lq) + " ids (one per query), got " +
                     std::to_string(segments_q.size()));
  if (!segments_k.empty() && segments_k.size() != Lk)
    throw InputError("segments.k: expected " + std::to_string(Lk) + " ids (one per key), got " +
                     std::to_string(segments_k.size()));
  if (prefix && Lq != Lk)
    throw InputError("prefix: prefix-LM is self-attention (Lq = Lk), got Lq = " + std::to_string(Lq) +
                     ", Lk = " + std::to_string(Lk));
}

double ScoreMod::apply(double x, std::size_t h, long p, long j) const {
  if (softcap) x = *softcap * std::tanh(x / *softcap);
  if (!alibi.empty()) x -= alibi[h] * double(p - j);
  return x;
}

double ScoreMod::derivative(double x) const {
  if (!softcap) return 1.0;
  const double t = std::tanh(x / *softcap);
  return 1.0 - t * t;
}

void ScoreMod::check(std::size_t num_heads) const {
  if (softcap && !(std::isfinite(*softcap) && *softcap > 0))
    throw InputError("softcap: expected a finite number > 0");
  if (!alibi.empty() && alibi.size() != num_heads)
    throw InputError("alibi: expected one slope per query head (" + std::to_string(num_heads) + "), got " +
                     std::to_string(alibi.size()));
  for (double m : alibi)
    if (!std::isfinite(m)) throw InputError("alibi: every slope must be finite");
}

}  // namespace attn
