#pragma once
// The models' elementwise activations, applied in place to a run of values at a time (the
// outputs of a product as they are done: stored_gemm's `activation`), so that they run on
// vectors (activation.cpp says what that gained).
#include <cstddef>

namespace attn {

// y[0..n) = f(y[0..n)) in place.
using Activation = void (*)(float* y, std::size_t n);

// GELU in the tanh form GPT-2 was trained with (Hendrycks & Gimpel 2016, "Gaussian Error Linear
// Units", section 2): 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3), computed as
// x sigmoid(2u), since 0.5 (1 + tanh(u)) = 1 / (1 + exp(-2u)).
void gelu_tanh(float* y, std::size_t n);

// SiLU (Elfwing et al. 2018; the SwiGLU gate of the Llama family): x sigmoid(x).
void silu(float* y, std::size_t n);

}  // namespace attn
