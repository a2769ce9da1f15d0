#!/usr/bin/env bash
# How close is flash to this CPU's ceiling? float32 flash at n = 4096, H = 8, d = 64 on 1 and 2
# threads against OpenBLAS's sgemm 2048^3 (the same FLOP rate a GEMM reaches here), and causal
# against non-causal time. Rounds alternate causal and non-causal runs, each with its own sgemm,
# and the table gives each column's best over the rounds (minimum time, maximum sgemm rate), and
# flash/sgemm "beside": the median, over all the rounds, of bench's runs beside an sgemm (each run's
# rate against one sgemm timed right after it in the same process: run_ms_by_round and
# sgemm_ms_by_round), so that a slow moment of a shared machine, or its clock moving between
# rounds, does not land on one side of the ratio only; and how far sgemm's rate and flash's
# fastest run moved from one call to the next (where that spread is wider than a ratio's distance
# from its target, best against best cannot say which side it is on). The non-causal calls also
# time one tile's Q K^T, softmax and P V alone (bench --parts), and the summary says what those
# parts predict for the run: where flash's time goes on this CPU, and the ceiling it puts on
# flash/sgemm.
#   scripts/bench_flash.sh            5 rounds of 2 timed runs each, and 2 more beside an sgemm
#                                     (installs what is missing and builds first)
#   scripts/bench_flash.sh --smoke    tiny sizes, seconds (what the test suite runs)
# ATTN_CLI=path/to/attn-cli skips the install and build; ROUNDS=N and REPEAT=N set the rounds
# and the timed runs per round (each after one untimed warm-up). OpenBLAS
# runs with its own choice of core (OPENBLAS_CORETYPE unset for these runs; attn-cli moves a
# fallback core to the right one at start-up), so the yardstick is this CPU's real sgemm. The
# flash kernel runs the blockings `attn-cli tune` chose on this machine, or the built-in ones
# (the header says which).
# Extra arguments go to every bench call.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
n=4096 heads=8 sgemm=2048 rounds=${ROUNDS:-5} repeat=${REPEAT:-2}
if [[ ${1:-} == --smoke ]]; then
  shift
  n=128 heads=2 sgemm=128 rounds=2 repeat=1
fi
ATTN_CLI=$("$root/scripts/attn_cli.sh")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for ((r = 1; r <= rounds; r++)); do
  for causal in "" --causal; do
    parts=--parts  # the non-causal runs also time one tile's parts alone (bench --parts)
    [[ -n $causal ]] && parts=
    env -u OPENBLAS_CORETYPE "$ATTN_CLI" bench --backend flash --n "$n" --heads "$heads" \
      --threads 1,2 --repeat "$repeat" --no-check --sgemm "$sgemm" --max-seconds 3600 --json $causal $parts "$@" \
      >"$work/round$r${causal:+-causal}.json"
  done
done
python3 - "$work" "$sgemm" "$rounds" <<'EOF'
import glob, json, os, statistics, sys

work, sgemm_n, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
sgemm_flops = 2.0 * sgemm_n ** 3
best = {}    # (causal, threads) -> (min ms, FLOPs of that run); ("sgemm", threads) -> max GFLOP/s
beside = {}  # (causal, threads) -> each run bench timed beside an sgemm: its rate over that sgemm's
parts = {}   # threads -> each round's bench --parts figures (non-causal runs)
calls = {}   # the same keys as best: each call's own figure (its fastest run; its sgemm's, in every call)
machine = shape = None
for path in sorted(glob.glob(os.path.join(work, "*.json"))):
    d = json.load(open(path))
    machine = d["machine"]
    for s in d["sgemm"]:
        key = ("sgemm", s["threads"])
        best[key] = max(best.get(key, 0.0), s["gflops"])
        calls.setdefault(key, []).append(s["gflops"])
    for r in d["runs"]:
        shape = (r["n"], r["heads"], r["head_dim"])
        key = (r["causal"], r["threads"])
        calls.setdefault(key, []).append(r["min_ms"])
        if key not in best or r["min_ms"] < best[key][0]:
            best[key] = (r["min_ms"], r["flops"])  # bench's own count (halved when causal)
        if "parts" in r:
            parts.setdefault(r["threads"], []).append(dict(r["parts"], flops=r["flops"], run_ms=r["min_ms"]))
        beside.setdefault(key, []).extend(
            (r["flops"] / ms) / (sgemm_flops / sms) for ms, sms in zip(r["run_ms_by_round"], r["sgemm_ms_by_round"]))

blas = machine["blas"]
n, heads, d = shape
print(f"flash float32, n = {n}, H = {heads}, d = {d}; sgemm {sgemm_n}^3; {rounds} alternating round(s)")
print(f"CPU: {machine['cpu']} ({machine['cpu_vectors']}); flash kernels: {machine['flash_isa']}; "
      f"OpenBLAS core: {blas['core']}{'' if blas['core_fits_cpu'] else ' (a fallback: ratios are against a slow sgemm)'}")
tune = machine["flash_tuning"]
print(f"flash blockings: Q K^T {tune['qk_kernel']}, P V {tune['pv_kernel']}, query tile {tune['block_q']} "
      f"({'chosen by attn-cli tune on this machine' if tune['source'] == 'tuned' else 'built-in'})")
print("best: each column's best over the rounds (minimum time, maximum sgemm rate). beside: the median, over the")
print("non-causal runs of all the rounds that bench times beside an sgemm, of each one's rate over that of the")
print("sgemm timed right after it, so that both sides of each ratio see the same moment of the machine (where its")
print("clock moves, best against best can pair one side's fast moment with the other's slow one)")
print(f"{'':>7}  {' best over the rounds ':-^86}  {'beside':->13}")
print(f"{'threads':>7}  {'sgemm GFLOP/s':>13}  {'non-causal ms':>13}  {'flash GFLOP/s':>13}  "
      f"{'flash/sgemm':>11}  {'causal ms':>9}  {'causal/non-causal':>17}  {'flash/sgemm':>13}")
for t in sorted({t for (kind, t) in best if kind != "sgemm"}):
    sg = best[("sgemm", t)]
    (full, flops), (causal, _) = best[(False, t)], best[(True, t)]
    rate = flops / (full * 1e6)
    print(f"{t:>7}  {sg:>13.1f}  {full:>13.2f}  {rate:>13.1f}  {rate / sg:>11.2f}  {causal:>9.2f}  "
          f"{causal / full:>17.3f}  {statistics.median(beside[(False, t)]):>13.2f}")
print(f"({len(next(iter(beside.values())))} runs beside an sgemm for each beside figure)")
# How far the machine moved between bench's calls: where the spread is wider than a ratio's distance
# from its target, one run of best against best cannot tell which side of the target it is on.
for t in sorted({t for (kind, t) in best if kind == "sgemm"}):
    sg, fl = calls[("sgemm", t)], calls[(False, t)]
    print(f"{t:>7}  the calls' spread: sgemm {min(sg):.1f}-{max(sg):.1f} GFLOP/s ({max(sg) / min(sg):.2f}x, "
          f"{len(sg)} calls), non-causal flash {min(fl):.2f}-{max(fl):.2f} ms ({max(fl) / min(fl):.2f}x, {len(fl)} calls)")
print("one tile's Q K^T, softmax and P V alone (bench --parts; medians of each call's rounds), every score of the run")
print("at a tile score's cost:")
for t in sorted(parts):
    ps = parts[t]
    sg = best[("sgemm", t)] / t  # the products run on one thread: against sgemm's rate per thread
    fastest = min(ps, key=lambda p: p["predicted_ms"])  # best against best, as the table's flash/sgemm
    rate = fastest["flops"] / (fastest["predicted_ms"] * 1e6)
    print(f"{t:>7}  Q K^T {max(p['qk_gflops'] for p in ps) / sg:.2f} and P V {max(p['pv_gflops'] for p in ps) / sg:.2f} "
          f"of sgemm's rate a thread (their best calls); the softmax "
          f"{100 * statistics.median(p['softmax_share'] for p in ps):.1f} % of a tile's time, one score's as long as "
          f"{statistics.median(p['softmax_cost_in_multiply_adds'] for p in ps):.1f} multiply-adds (medians);")
    print(f"{'':>7}  so flash/sgemm {rate / best[('sgemm', t)]:.2f} (the best call's parts, {fastest['predicted_ms']:.2f} ms); "
          f"each call's fastest run took {statistics.median(p['run_ms'] / p['predicted_ms'] for p in ps):.2f}x what "
          f"its parts predict (median of {len(ps)})")
print("the targets (docs/performance.md): flash/sgemm >= 0.90, causal/non-causal <= 0.55 (the causal run does 0.5 + 1/(2n)"
      " of the score work)")
EOF
