#pragma once
// A GPT-2 model folder as Hugging Face writes it (a snapshot in ~/.cache/huggingface/hub/ or a
// folder written by save_pretrained): config.json {n_layer, n_head, n_embd, vocab_size,
// n_positions, layer_norm_epsilon, model_type: "gpt2"} and model.safetensors (F32, F16 or
// BF16) with the tensors of gpt2_model.hpp's gpt2_parameters(), named with or without the
// "transformer." prefix (wte.weight and wpe.weight also as plain wte and wpe). lm_head.weight,
// when present, must equal wte (GPT-2 ties them); the causal-mask buffers h.{i}.attn.bias and
// h.{i}.attn.masked_bias are ignored.
#include <string>

#include "attn/engine/models/gpt2_model.hpp"

namespace attn {

// True when DIR/config.json is a JSON object with "model_type": "gpt2", or with the keys
// n_layer and n_embd (older folders have no model_type). False otherwise, also when the file
// is missing or unreadable: the caller then reads the folder as a toy model.
bool is_gpt2_folder(const std::string& dir);

// InputError naming the field for a missing, non-integer or absurd value (check_gpt2_config).
Gpt2Config read_gpt2_config(const std::string& dir);

// InputError naming the tensor for a missing tensor, a wrong shape (expected and actual), a
// non-finite value, an lm_head.weight that differs from wte, or an unexpected tensor; the
// safetensors reader's own errors for a truncated or lying file.
//
// per_block (the default) leaves wte and the blocks in the mapped file (Gpt2Model::stored): a
// pass reads each matrix where it is stored and widens only a block's LayerNorms and biases when
// it reaches them, as forward, demo and generate do (a float16 folder's decode step then reads
// half the bytes of a float32 copy: 24-25 tokens/s against 15-18 for GPT-2 small on a Zen 3
// EPYC, the same bits). widen_all widens every tensor into the model once (Gpt2Model::blocks and
// wte held as float32). A non-finite value in a weight left in the file is found when it is read.
enum class Gpt2Loading { per_block, widen_all };
Gpt2Model read_gpt2_model(const std::string& dir, Gpt2Loading loading = Gpt2Loading::per_block);

}  // namespace attn
