#!/usr/bin/python3
"""The PyTorch peer of `attn-cli bench --mode train` (scripts/bench_train.sh runs both).

The same model as `attn-cli train`'s defaults, written as a learner would write it in PyTorch:
token + learned position embeddings, 2 layers of causal multi-head attention (4 heads, d_model
64, no bias, scale 1/sqrt(16)) with residual connections, an unembedding; no LayerNorm, no MLP;
vocab 64, context 32; batch 64 rows of 33 ids (16 random ids, then the same again, cut to 33:
every one of the 32 positions predicts the next id); cross-entropy; torch.optim.Adam lr 4e-3.
Attention is the explicit softmax(q k^T / sqrt(d) + causal mask) v: Debian's torch 1.13 has no
scaled_dot_product_attention.

Prints JSON: min and median ms per step over --repeat runs of --steps steps (after 5 warm-up
steps), and steps per second from the min. One thread unless --threads says otherwise.
"""
import argparse
import json
import math
import statistics
import time

import torch


class Layer(torch.nn.Module):
    def __init__(self, d_model, heads):
        super().__init__()
        self.heads = heads
        self.w_q, self.w_k, self.w_v, self.w_o = (torch.nn.Linear(d_model, d_model, bias=False) for _ in range(4))

    def forward(self, x):
        b, n, d_model = x.shape
        d = d_model // self.heads
        split = lambda t: t.view(b, n, self.heads, d).transpose(1, 2)  # [b, heads, n, d]
        q, k, v = split(self.w_q(x)), split(self.w_k(x)), split(self.w_v(x))
        scores = q @ k.transpose(-1, -2) / math.sqrt(d)
        future = torch.ones(n, n, dtype=torch.bool).triu(1)
        weights = scores.masked_fill(future, float("-inf")).softmax(-1)
        return x + self.w_o((weights @ v).transpose(1, 2).reshape(b, n, d_model))


class Toy(torch.nn.Module):
    def __init__(self, vocab, d_model, heads, layers, context):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, d_model)
        self.pos = torch.nn.Embedding(context, d_model)
        self.layers = torch.nn.ModuleList(Layer(d_model, heads) for _ in range(layers))
        self.unembed = torch.nn.Linear(d_model, vocab, bias=False)

    def forward(self, tokens):
        x = self.embed(tokens) + self.pos.weight[: tokens.shape[1]]
        for layer in self.layers:
            x = layer(x)
        return self.unembed(x)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(42)
    vocab, d_model, heads, layers, context, batch = 64, 64, 4, 2, 32, 64
    model = Toy(vocab, d_model, heads, layers, context)
    opt = torch.optim.Adam(model.parameters(), lr=4e-3)

    def step():
        half = torch.randint(0, vocab, (batch, context // 2 + 1))
        rows = torch.cat([half, half], 1)[:, : context + 1]
        logits = model(rows[:, :-1])
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, vocab), rows[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    for _ in range(5):
        step()
    ms = []
    for _ in range(args.repeat):
        start = time.perf_counter()
        for _ in range(args.steps):
            loss = step()
        ms.append((time.perf_counter() - start) * 1e3 / args.steps)
    print(json.dumps({"peer": "pytorch", "torch_version": torch.__version__, "threads": args.threads,
                      "steps": args.steps, "batch": batch, "min_ms_per_step": min(ms),
                      "median_ms_per_step": statistics.median(ms), "steps_per_s": 1e3 / min(ms),
                      "final_loss": float(loss)}))


if __name__ == "__main__":
    main()
