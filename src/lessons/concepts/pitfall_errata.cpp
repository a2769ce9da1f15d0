// Claims found in attention tutorials and teaching notes that a computation shows wrong. Each is a
// Pitfall like the others (wrong way = the claim, right way = the correction), its numbers computed
// here rather than typed in: the format constants of float16, the sizes of a model, a softmax.
#include <cmath>
#include <cstdint>

#include "attn/engine/attention/attention.hpp"
#include "attn/io/number_format.hpp"
#include "attn/lessons/concepts/pitfalls.hpp"
#include "attn/lessons/concepts/softmax_stats.hpp"

namespace attn {
namespace {

// IEEE 754 binary16: 10 stored fraction bits, exponent bias 15, the top exponent kept for inf/NaN.
double largest_float16() {
  const int fraction_bits = 10, max_exponent = 15;
  return (2.0 - std::ldexp(1.0, -fraction_bits)) * std::ldexp(1.0, max_exponent);
}

}  // namespace

Pitfall pitfall_mask_value_float16() {
  const double fill = 1e9, half_max = largest_float16();
  Pitfall p{"mask-value-float16", "-1e9 as the mask value, in float16",
            "masked_fill(mask, -1e9) \"for numerical stability, instead of -inf\"",
            "masked_fill(mask, float('-inf')), or torch.finfo(scores.dtype).min",
            "-1e9 does not fit in float16 (largest finite " + format_g(half_max, 6) +
                "): in half precision the fill overflows and PyTorch's masked_fill refuses it. -inf is exact in "
                "every float format, and exp(-inf) = 0.",
            "teaching notes' mask_value = -1e9 (\"数值稳定性：避免使用 -inf\", numerical stability: avoid -inf)",
            {}, {}};
  p.facts.push_back({"|fill value| / largest finite float16 (-inf: none)", fill / half_max, 0.0});
  p.facts.push_back({"largest finite float16", half_max, half_max});
  p.facts.push_back({"the fill is exact in float16 (1 = yes)", double(fill <= half_max), 1.0});
  return p;
}

Pitfall pitfall_float_mask_sdpa() {
  // A 0/1 float mask (1 = keep) passed as SDPA's attn_mask: a float attn_mask is ADDED to the
  // scores, so the kept keys gain 1 and the "masked" key gains 0 — nothing is masked.
  const std::vector<float> scores = {2.0f, 1.0f, 0.5f, 3.0f};
  const std::vector<double> keep = {1, 1, 1, 0};
  std::vector<double> added(scores.size());
  for (std::size_t j = 0; j < scores.size(); ++j) added[j] = double(scores[j]) + keep[j];
  const std::vector<double> wrong = softmax_of(added);
  Mask3 allowed = Mask3::from_shape({1, 1, scores.size()});
  for (std::size_t j = 0; j < scores.size(); ++j) allowed(0, 0, j) = keep[j] != 0;
  Tensor3 q = xt::ones<float>({std::size_t{1}, std::size_t{1}, std::size_t{1}});
  Tensor3 k = Tensor3::from_shape({1, scores.size(), 1});
  std::copy(scores.begin(), scores.end(), k.begin());
  SdpaOptions o;
  o.scale = 1.0;
  const SdpaResult r = attention(q, k, k, &allowed, o);
  Tensor2 wrong_row = Tensor2::from_shape({1, scores.size()});
  for (std::size_t j = 0; j < scores.size(); ++j) wrong_row(0, j) = static_cast<float>(wrong[j]);
  Pitfall p{"float-mask-sdpa", "A float 0/1 mask passed to F.scaled_dot_product_attention",
            "attn_mask = mask.float() (1 = keep, 0 = masked)",
            "attn_mask = mask.bool() (True = take part), or a float mask of 0 and -inf",
            "SDPA adds a float attn_mask to the scores: 0/1 shifts the kept keys by 1 and masks nothing. Pass a "
            "boolean mask, or 0 / -inf.",
            "a fused_attention example calling scaled_dot_product_attention(Q, K, V, attn_mask=mask) with the 0/1 "
            "mask of masked_fill(mask == 0, -1e9)",
            {}, {}};
  p.tables.push_back({"weights of one query (scores 2, 1, 0.5, 3; k3 is masked)", {"query"}, {"k0", "k1", "k2", "k3"},
                      wrong_row, Tensor2(xt::view(r.weights, 0, xt::all(), xt::all()))});
  p.tables.back().right_allowed = Mask2(xt::view(allowed, 0, xt::all(), xt::all()));  // the float mask masks nothing
  p.facts.push_back({"weight on the masked key k3", wrong[3], r.weights(0, 0, 3)});
  return p;
}

Pitfall pitfall_paper_dk() {
  // Vaswani et al. 2017, section 3.2.2: d_model = 512, h = 8, d_k = d_v = d_model / h.
  const double d_model = 512, heads = 8, d_k = d_model / heads;
  Pitfall p{"paper-dk", "d_k in \"Attention Is All You Need\"",
            "d_k = 512, so q.k has standard deviation sqrt(512)",
            "d_model = 512 split over h = 8 heads: d_k = 512 / 8 = 64 per head",
            "The scale uses the per-head width d_k, not d_model: for the base Transformer 1/sqrt(" + format_g(d_k) +
                ") = " + format_g(1 / std::sqrt(d_k)) + ". With unit-variance entries the scores' standard deviation is "
                "sqrt(d_k) (attn-cli variance).",
            "teaching notes' \"when d_k = 512, the dot product's standard deviation is sqrt(512) = 22.6\"", {}, {}};
  p.facts.push_back({"d_k of the base model", d_model, d_k});
  p.facts.push_back({"standard deviation of q.k", std::sqrt(d_model), std::sqrt(d_k)});
  return p;
}

Pitfall pitfall_softmax_cost() {
  const double s = 256;
  Pitfall p{"softmax-cost", "The cost of softmax over an s x s score matrix",
            "s x (s + s - 1) = s^2 operations", "s x (s + s - 1) = 2 s^2 - s: about 2 s^2 (s exps and s - 1 additions per row)",
            "Count before rounding: per row, s exponentials and s - 1 additions (and s divisions, a max and s "
            "subtractions in a stable softmax), so at least 2 s^2, not s^2.",
            "teaching notes' operation count for s = 256: \"s x (s + s - 1) ~ s^2\"", {}, {}};
  p.facts.push_back({"operations at s = 256", s * s, s * (s + s - 1)});
  p.facts.push_back({"ratio to s^2", 1.0, s * (s + s - 1) / (s * s)});
  return p;
}

Pitfall pitfall_mha_bias() {
  // torch.nn.MultiheadAttention(embed_dim, num_heads, bias=True, ...): bias defaults to True, adding
  // in_proj_bias [3 d] and out_proj.bias [d] to the weights in_proj_weight [3 d, d] and out_proj [d, d].
  const double d = 512;
  const double weights = 3 * d * d + d * d, biases = 3 * d + d;
  Pitfall p{"mha-bias", "Does PyTorch's nn.MultiheadAttention add biases?",
            "nn.MultiheadAttention adds no bias by default", "bias=True is the default: Q, K, V and the output projection all have one",
            "Read the signature: nn.MultiheadAttention(embed_dim, num_heads, dropout=0.0, bias=True, ...). Pass "
            "bias=False to match a bias-free formula; attn-cli mha takes b_q, b_k, b_v, b_o when you give them.",
            "teaching notes' \"PyTorch's MultiheadAttention adds none by default\"", {}, {}};
  p.facts.push_back({"parameters at d = 512", weights, weights + biases});
  p.facts.push_back({"of which biases", 0, biases});
  return p;
}

Pitfall pitfall_flash_memory() {
  // Extra memory of one attention call beyond Q, K, V and O, float32, one head: the naive way keeps
  // the n x n weights; FlashAttention keeps per-row statistics (the logsumexp for the backward).
  const double n = 4096, bytes = 4;
  const double naive = n * n * bytes, flash = n * bytes;
  Pitfall p{"flash-memory", "FlashAttention's memory saving: 2-4x?",
            "FlashAttention improves memory efficiency 2-4x",
            "memory for the attention matrix goes from O(n^2) to O(n): n times less (" + format_g(naive / flash, 6) +
                "x at n = " + format_g(n, 6) + "); 2-4x is the order of its reported speed-ups",
            "FlashAttention never stores the n x n matrix: it keeps one number per row (the logsumexp) and "
            "recomputes tiles in the backward. The saving grows with n; 2-4x is a speed figure. attn-cli complexity "
            "shows both.",
            "teaching notes' summary table: \"tiled computation, memory efficiency up 2-4x\"", {}, {}};
  p.facts.push_back({"extra bytes at n = 4096, one head (naive)", naive, naive});
  p.facts.push_back({"extra bytes at n = 4096, one head (flash)", naive / 4, flash});
  p.facts.push_back({"saving, x", 4, naive / flash});
  return p;
}

Pitfall pitfall_mb_mib() {
  // 8 heads of an n x n float32 matrix at n = 8192, as a complexity table prints it.
  const double bytes = 8.0 * 8192 * 8192 * 4, mib = bytes / (1024.0 * 1024.0), mb = bytes / 1e6;
  Pitfall p{"mb-mib", "\"MB\" computed as bytes / (1024 x 1024)",
            "memory_mb = bytes / (1024 * 1024), printed as \"MB\"",
            "bytes / 2^20 is MiB; MB is bytes / 10^6 (IEC 80000-13). Label what you compute",
            "A mebibyte is " + format_fixed((std::ldexp(1.0, 20) / 1e6 - 1) * 100, 1) +
                " % larger than a megabyte and a gibibyte " + format_fixed((std::ldexp(1.0, 30) / 1e9 - 1) * 100, 1) +
                " % larger than a gigabyte: print MiB, or divide by 10^6.",
            "a complexity table's memory column (8 heads, n = 8192)", {}, {}};
  p.facts.push_back({"printed \"MB\" for 8 x 8192^2 float32", mib, mb});
  p.facts.push_back({"bytes in the printed unit", std::ldexp(1.0, 20), 1e6});
  return p;
}

}  // namespace attn
