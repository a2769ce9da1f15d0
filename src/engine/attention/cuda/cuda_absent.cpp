// The CUDA backend's entry points in a build without nvcc: always "not usable", with the
// reason the user will see.
#include "flash_cuda.hpp"

namespace attn::cuda {

bool device_usable(std::string& reason) {
  reason = "no CUDA device (attn-cli was built without CUDA: nvcc was not found)";
  return false;
}

std::string flash_forward(const float*, const float*, const float*, const unsigned char*, std::size_t,
                          const variants::IndexRules*, const FlashDims&, bool, float, const ScoreMods&, Dtype, float*,
                          float*, std::size_t, std::vector<double>*) {
  return "attn-cli was built without CUDA";
}

std::string flash_backward(const float*, const float*, const float*, const unsigned char*, std::size_t,
                           const variants::IndexRules*, const FlashDims&, bool, float, const ScoreMods&, const float*,
                           const float*, const float*, float*, float*, float*) {
  return "attn-cli was built without CUDA";
}

}  // namespace attn::cuda
