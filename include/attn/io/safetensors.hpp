#pragma once
// safetensors (Hugging Face's tensor file): 8 bytes little-endian N, an N-byte JSON header
// {name: {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__"?: {str: str}}, then
// the raw little-endian data; offsets are relative to the end of the header.
//
// Reading trusts nothing: the header length, every dtype, shape and offset pair is checked
// against the file before a byte of data is read, and the tensors must tile the data exactly
// (no overlap, no hole, nothing after the last one), as the reference Rust reader requires.
// Any violation is an InputError naming the tensor and what is wrong.
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "attn/engine/core/stored_matrix.hpp"
#include "attn/engine/core/tensor.hpp"

namespace attn {

// One tensor's place in the file's bytes, checked against the header and the file.
struct SafetensorsEntry {
  std::string dtype;  // "F32", "F16" or "BF16"
  Shape shape;
  const unsigned char* data;  // count values of the dtype's width, little-endian
  std::size_t count;
};

// name -> entry, every check above done, pointing into `bytes` (which must outlive the map).
std::map<std::string, SafetensorsEntry> index_safetensors(std::string_view bytes, const std::string& source);

// The values [first, first + count) of e as an entry of their own (no shape), and the bytes an
// entry's values take.
SafetensorsEntry slice_entry(const SafetensorsEntry& e, std::size_t first, std::size_t count);
std::size_t entry_bytes(const SafetensorsEntry& e);

// A two-dimensional entry as the engine reads a matrix in place (stored_matrix.hpp).
StoredMatrix stored_matrix(const SafetensorsEntry& e);

// out[0..e.count) = the entry's values as float; F16 and BF16 are widened exactly (F16 with
// the CPU's F16C conversion instructions when it has them). Returns false when a value is not
// finite (the rest is still written).
bool widen_to_float(const SafetensorsEntry& e, float* out);

// The file mapped read-only (mmap: nothing is copied until a tensor is widened) and indexed.
// The entries point into the mapping and live as long as this object.
class MappedSafetensors {
 public:
  explicit MappedSafetensors(const std::string& path);  // InputError as read_safetensors
  ~MappedSafetensors();
  MappedSafetensors(const MappedSafetensors&) = delete;
  MappedSafetensors& operator=(const MappedSafetensors&) = delete;
  const std::map<std::string, SafetensorsEntry>& tensors() const { return tensors_; }

 private:
  void* map_ = nullptr;
  std::size_t size_ = 0;
  std::map<std::string, SafetensorsEntry> tensors_;
};

struct StoredTensor {
  std::string dtype;  // as in the file: "F32", "F16" or "BF16" (values are converted to float)
  Shape shape;
  std::vector<float> values;  // row-major
};

// name -> tensor, from the file at path. F16 and BF16 are widened to float exactly.
std::map<std::string, StoredTensor> read_safetensors(const std::string& path);

// The same from the file's bytes (`source` names it in error messages).
std::map<std::string, StoredTensor> parse_safetensors(std::string_view bytes, const std::string& source);

// The bytes of a float32 safetensors file holding these tensors in this order (the header's
// keys are sorted by nlohmann; the data follows the given order). Same input, same bytes.
std::string safetensors_bytes(const std::vector<std::pair<std::string, const Tensor2*>>& tensors);

}  // namespace attn
