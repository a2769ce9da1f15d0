#!/usr/bin/env bash
# A model's forward pass against OpenBLAS's sgemm on the same threads, in alternating rounds:
# GPT-2 small's shape (12 layers, width 768, vocabulary 50257, float16, random weights: the
# shapes are what count) on 64 tokens, each round one `forward` (the pass alone, as it prints it:
# reading the folder is not in it) and one sgemm 2048^3 (attn-cli bench --sgemm, on the BLAS core
# attn-cli corrects at start-up). Prints every round, then the median pass / median sgemm.
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
ids=$(/usr/bin/python3 -c "print(','.join(str(i * 7919 % 300) for i in range($tokens)))")

echo "$model forward, $tokens tokens, against sgemm ${n}^3, $threads thread(s), $rounds alternating rounds"
passes=() sgemms=()
for ((r = 1; r <= rounds; ++r)); do
  pass=$("$ATTN_CLI" forward --model "$dir" --tokens "$ids" |
    sed -n 's/.*the forward pass \([0-9.]*\) s for \([0-9.]*\) GFLOP (\([0-9.]*\) GFLOP\/s.*/\3/p')
  sgemm=$("$ATTN_CLI" bench --backend flash --n 64 --heads 1 --repeat 1 --threads "$threads" --sgemm "$n" --no-check \
    --json | /usr/bin/python3 -c "import json, sys; print(round(json.load(sys.stdin)['sgemm'][0]['gflops'], 1))")
  [[ -n $pass && -n $sgemm ]] || { echo "error: round $r printed no figure" >&2; exit 1; }
  echo "round $r: forward pass $pass GFLOP/s, sgemm $sgemm GFLOP/s"
  passes+=("$pass") sgemms+=("$sgemm")
done
/usr/bin/python3 - "${passes[*]}" "${sgemms[*]}" <<'PY'
import statistics, sys
passes = [float(x) for x in sys.argv[1].split()]
sgemms = [float(x) for x in sys.argv[2].split()]
p, s = statistics.median(passes), statistics.median(sgemms)
print(f"median: forward pass {p:.1f} GFLOP/s, sgemm {s:.1f} GFLOP/s: {p / s:.2f} of sgemm "
      f"(rounds {min(passes):.1f}-{max(passes):.1f} and {min(sgemms):.1f}-{max(sgemms):.1f})")
PY
