#!/usr/bin/env bash
# Decode at memory speed? One query row against a KV cache (H = 8, d = 64, float32), 1 and 2
# threads: attn-cli's decode path against a plain streaming read of the same K and V bytes (the
# machine's ceiling, same process) and against the tiled (prefill) kernel; then GQA 8:1, which
# reads an eighth of the bytes; then a bfloat16 cache, which reads half. Rounds alternate the
# three, and the times and rates are the best over the rounds (minimum time, fastest read), as
# scripts/bench_flash.sh does: a slow moment of a shared machine then lands on no one side of a
# ratio (the float32 and bfloat16 steps are timed seconds apart, in separate processes). Beside
# that ratio, "beside" is the median, over every repeat of all the rounds, of each read's time
# over the decode run's just before it (bench's side_by_side_fraction_of_stream): both sides of
# each pair see the same moment of the machine.
#   scripts/bench_decode.sh            3 rounds of the full sweep (installs what is missing and
#                                      builds first)
#   scripts/bench_decode.sh --smoke    tiny sizes, one round, seconds (what the test suite runs)
# ATTN_CLI=path/to/attn-cli skips the install and build; ROUNDS=N sets the rounds. Extra
# arguments go to every bench call.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
kv=1024,4096,16384 repeat=9 rounds=${ROUNDS:-3}
if [[ ${1:-} == --smoke ]]; then
  shift
  kv=300,1000 repeat=1 rounds=1
fi
ATTN_CLI=$("$root/scripts/attn_cli.sh")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for ((r = 1; r <= rounds; r++)); do
  "$ATTN_CLI" bench --mode decode --kv "$kv" --heads 8 --head-dim 64 --threads 1,2 --repeat "$repeat" --json "$@" \
    >"$work/f32-$r.json"
  "$ATTN_CLI" bench --mode decode --kv "$kv" --heads 8 --kv-heads 1 --head-dim 64 --threads 1,2 --repeat "$repeat" \
    --json "$@" >"$work/gqa-$r.json"
  "$ATTN_CLI" bench --mode decode --kv "$kv" --heads 8 --head-dim 64 --kv-dtype bf16 --threads 1,2 \
    --repeat "$repeat" --json "$@" >"$work/bf16-$r.json"
done
python3 - "$work" "$rounds" <<'EOF'
import glob, json, os, statistics, sys

work, rounds = sys.argv[1], int(sys.argv[2])
best = {}  # (cache, kv_len, threads) -> the best of the rounds' figures
beside = {}  # (cache, kv_len, threads) -> every repeat's read time over the decode run's just before it
machine = None
for cache in ("f32", "gqa", "bf16"):
    for path in sorted(glob.glob(os.path.join(work, f"{cache}-*.json"))):
        d = json.load(open(path))
        machine = d["machine"]
        for r in d["runs"]:
            key = (cache, r["kv_len"], r["threads"])
            b = best.setdefault(key, {"ms": float("inf"), "stream": 0.0, "tiled": float("inf"), "err": 0.0,
                                      "bytes": r["kv_bytes"], "huge": r["kv_huge_page_bytes"]})
            b["ms"] = min(b["ms"], r["min_ms"])
            b["stream"] = max(b["stream"], r["stream_gbps"])
            b["tiled"] = min(b["tiled"], r.get("tiled_min_ms", float("inf")))
            b["err"] = max(b["err"], r.get("max_abs_err_vs_naive") or 0.0)
            b["huge"] = min(b["huge"], r["kv_huge_page_bytes"])
            beside.setdefault(key, []).extend(s / k for k, s in zip(r["run_ms_by_round"], r["stream_ms_by_round"]))

tune = machine["flash_tuning"]["decode"]
print(f"decode: 1 query row x 8 heads, d = 64, float32 arithmetic; best of {rounds} alternating round(s): "
      "min time, and the fastest streaming read of the same bytes (same processes)")
print(f"CPU: {machine['cpu']} ({machine['cpu_vectors']}); flash kernels: {machine['flash_isa']}")
print(f"decode tuning: prefetch {tune['prefetch_blocks']} block(s) ahead, a bfloat16 cache's rows "
      f"{tune['bf16_near_keys']} keys ahead, a float32 cache's {tune.get('f32_near_keys', 0)}, a second thread from "
      f"{tune['decode_thread_work']} (key, row) pairs "
      f"({'measured here by attn-cli tune' if tune['source'] == 'tuned' else 'built-in: ' + tune.get('note', '')})")
print("KV GB/s = bytes of K and V / min time; ratio = that / stream (best against best); beside = the median,")
print("over every repeat of all the rounds, of each read's time over the decode run's just before it (both see the")
print("same moment of the machine, where best against best can pair one side's fast moment with the other's slow")
print("one); 2M pages = the share of K and V Linux backed with 2 MiB pages; tiled ms = the prefill kernel on the same")
print("call; max |err| against float64 on the float32 K and V (for a bfloat16 cache: its rounding and the kernel's)")
names = {"f32": "float32", "gqa": "GQA 8:1", "bf16": "bfloat16"}
print(f"{'cache':>8} {'kv_len':>7} {'threads':>7} {'min ms':>9} {'KV MiB':>7} {'KV GB/s':>8} {'stream':>7} "
      f"{'ratio':>6} {'beside':>6} {'2M pages':>8} {'tiled ms':>9} {'max |err|':>10}")
for cache in ("f32", "gqa", "bf16"):
    for (c, kv, t), b in sorted(best.items()):
        if c != cache:
            continue
        rate = b["bytes"] / (b["ms"] * 1e6)
        err = f"{b['err']:.2e}" if b["err"] else "-"
        print(f"{names[cache]:>8} {kv:>7} {t:>7} {b['ms']:>9.3f} {b['bytes'] / 2**20:>7.1f} {rate:>8.1f} "
              f"{b['stream']:>7.1f} {rate / b['stream']:>6.2f} {statistics.median(beside[(c, kv, t)]):>6.2f} "
              f"{100 * b['huge'] / b['bytes']:>7.0f}% "
              f"{b['tiled']:>9.3f} {err:>10}")
    print()

kvs = sorted({kv for (c, kv, t) in best if c == "f32"})
threads = sorted({t for (c, kv, t) in best if c == "f32"})
top, low = kvs[-1], kvs[0]
def ratio(c, kv, t):
    b = best[(c, kv, t)]
    return b["bytes"] / (b["ms"] * 1e6) / b["stream"]
print(f"the targets (docs/performance.md), at kv_len {top}:")
print("  float32 decode / streaming read >= 0.90: best " +
      ", ".join(f"{ratio('f32', top, t):.2f} ({t} thread{'s' if t > 1 else ''})" for t in threads) + "; beside " +
      ", ".join(f"{statistics.median(beside[('f32', top, t)]):.2f} ({t} thread{'s' if t > 1 else ''})"
                for t in threads))
print("  bfloat16 / float32 speed >= 1.7: " +
      ", ".join(f"{best[('f32', top, t)]['ms'] / best[('bf16', top, t)]['ms']:.2f} ({t} thread{'s' if t > 1 else ''})"
                for t in threads))
if len(threads) > 1:
    print(f"  {threads[-1]} threads never slower than 1, at kv_len {low}: " +
          ", ".join(f"{best[(c, low, 1)]['ms'] / best[(c, low, threads[-1])]['ms']:.2f}x ({names[c]})"
                    for c in ("f32", "bf16")))  # GQA 8:1's one KV head is one task there: one thread
EOF
