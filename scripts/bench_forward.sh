#!/usr/bin/env bash
# A model's forward pass against OpenBLAS's sgemm on the same threads, in one run of
# `attn-cli bench --mode forward`: GPT-2 small's shape (12 layers, width 768, vocabulary 50257,
# float16, random weights: the shapes are what count) on 64 tokens. After a first pass on fresh
# memory (shown apart, with its page faults), each round is one pass (as `forward` times it,
# reading the folder not in it) and one sgemm 2048^3, in the same process, so both see the machine
# as it is; the ratio is the median of the rounds' own ratios.
#   scripts/bench_forward.sh [ROUNDS]         default 9 rounds; writes the 250 MB folder to
#                                             ${TMPDIR:-/tmp}/attn-bench-gpt2-small once
#   scripts/bench_forward.sh --llama [ROUNDS] the same on SmolLM2-135M's shape (bfloat16)
#   scripts/bench_forward.sh --smoke          a 2-layer, 64-wide GPT-2 and sgemm 256, 2 rounds
# forward runs on every hardware thread, and sgemm on as many. ATTN_CLI=path/to/attn-cli skips
# the install and build.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
model=gpt2 rounds=9 n=2048 tokens=64
case ${1:-} in
  --smoke) model=smoke rounds=2 n=256 tokens=16; shift ;;
  --llama) model=llama; shift ;;
esac
rounds=${1:-$rounds}
threads=$(nproc)
ATTN_CLI=$("$root/scripts/attn_cli.sh")
work=${TMPDIR:-/tmp}
case $model in
  gpt2) dir=$work/attn-bench-gpt2-small
    make=(make_gpt2_folder.py --layers 12 --embd 768 --heads 12 --positions 1024 --vocab 50257 --dtype f16) ;;
  llama) dir=$work/attn-bench-smollm2-135m
    make=(make_decoder_folder.py --hidden 576 --intermediate 1536 --layers 30 --heads 9 --kv-heads 3 --vocab 49152
      --positions 2048 --tie --dtype bf16 --tokenizer smollm) ;;
  smoke) dir=$(mktemp -d "$work/attn-bench-forward.XXXXXX")
    trap 'rm -rf "$dir"' EXIT
    make=(make_gpt2_folder.py --layers 2 --embd 64 --heads 4 --positions 64 --vocab 300 --dtype f16) ;;
esac
[[ -f $dir/model.safetensors ]] || /usr/bin/python3 "$root/scripts/${make[0]}" --out "$dir" "${make[@]:1}" >/dev/null
"$ATTN_CLI" bench --mode forward --model "$dir" --n "$tokens" --threads "$threads" --repeat "$rounds" --sgemm "$n"
