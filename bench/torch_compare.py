#!/usr/bin/env python3
"""The PyTorch side of bench/gpu-check.sh (skipped when torch is absent).

Prints lines `torch <name> <value> <unit>` for:
  - prefill attention: torch.nn.functional.scaled_dot_product_attention,
    causal, bf16, 32 query heads of 128 over 8 KV heads (expanded to 32, as
    SDPA wants equal heads), at the lengths bench_cuda's BM_PrefillAttention uses;
  - decode tokens per second of a Hugging Face LlamaForCausalLM with the shape
    of bench_cuda's bench_model_config() and the same weights: the synthetic
    generator (engine/model_files/synthetic_model.cpp, splitmix64) is
    reproduced here bit for bit with numpy, tensor by tensor in the same order.
No network is needed: the model is built from a config, never downloaded.
"""
import sys
import time

try:
    import numpy as np
    import torch
except ImportError as e:  # the comparison is optional
    print(f"SKIPPED: PyTorch comparison ({e})")
    sys.exit(0)

GOLDEN = np.uint64(0x9E3779B97F4A7C15)
M1 = np.uint64(0xBF58476D1CE4E5B9)
M2 = np.uint64(0x94D049BB133111EB)


class SplitMix64:
    """splitmix64 as synthetic_model.cpp: output k is mix(seed + k * golden)."""

    def __init__(self, seed):
        self.state = np.uint64(seed)

    def uniform(self, lo, hi, n):
        with np.errstate(over="ignore"):
            k = np.arange(1, n + 1, dtype=np.uint64)
            z = self.state + k * GOLDEN
            self.state = self.state + np.uint64(n) * GOLDEN
            z = (z ^ (z >> np.uint64(30))) * M1
            z = (z ^ (z >> np.uint64(27))) * M2
            z = z ^ (z >> np.uint64(31))
        u = (z >> np.uint64(40)).astype(np.float32)
        lo, hi = np.float32(lo), np.float32(hi)
        return lo + ((hi - lo) * u) * np.float32(1.0 / 16777216.0)

    def matrix(self, rows, cols):
        a = np.sqrt(np.float32(3.0) / np.float32(cols)).astype(np.float32)
        return self.uniform(-a, a, rows * cols).reshape(rows, cols)

    def norm(self, n):
        return self.uniform(0.5, 1.5, n)


def bench_sdpa(length):
    q = torch.randn(1, 32, length, 128, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(1, 8, length, 128, device="cuda", dtype=torch.bfloat16).repeat_interleave(4, dim=1)
    v = torch.randn_like(k)
    f = lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    f()
    torch.cuda.synchronize()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(5):
        f()
    stop.record()
    torch.cuda.synchronize()
    ms = start.elapsed_time(stop) / 5
    flops = 4.0 * length * length / 2 * 32 * 128
    print(f"torch sdpa_prefill_{length} {flops / ms / 1e9:.1f} TFLOP/s ({ms:.3f} ms)")


def build_llama(c, seed=1):
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(hidden_size=c["dim"], intermediate_size=c["hidden"], num_hidden_layers=c["layers"],
                         num_attention_heads=c["heads"], num_key_value_heads=c["kv_heads"],
                         vocab_size=c["vocab"], max_position_embeddings=c["ctx"], rms_norm_eps=1e-5,
                         rope_theta=10000.0, tie_word_embeddings=False)
    model = LlamaForCausalLM(config).to(torch.bfloat16)
    rng = SplitMix64(seed)
    d, hd = c["dim"], c["dim"] // c["heads"]
    q_dim, kv_dim = c["heads"] * hd, c["kv_heads"] * hd
    t = lambda a: torch.from_numpy(np.ascontiguousarray(a)).to(torch.bfloat16)
    with torch.no_grad():
        model.model.embed_tokens.weight.copy_(t(rng.matrix(c["vocab"], d) * np.sqrt(np.float32(d))))
        for layer in model.model.layers:
            layer.input_layernorm.weight.copy_(t(rng.norm(d)))
            layer.self_attn.q_proj.weight.copy_(t(rng.matrix(q_dim, d)))
            layer.self_attn.k_proj.weight.copy_(t(rng.matrix(kv_dim, d)))
            layer.self_attn.v_proj.weight.copy_(t(rng.matrix(kv_dim, d)))
            layer.self_attn.o_proj.weight.copy_(t(rng.matrix(d, q_dim)))
            layer.post_attention_layernorm.weight.copy_(t(rng.norm(d)))
            layer.mlp.gate_proj.weight.copy_(t(rng.matrix(c["hidden"], d)))
            layer.mlp.down_proj.weight.copy_(t(rng.matrix(d, c["hidden"])))
            layer.mlp.up_proj.weight.copy_(t(rng.matrix(c["hidden"], d)))
        model.model.norm.weight.copy_(t(rng.norm(d)))
        model.lm_head.weight.copy_(t(rng.matrix(c["vocab"], d)))
    return model.cuda().eval()


def bench_hf_decode(model, batch, ctx):
    ids = torch.ones(batch, ctx, dtype=torch.long, device="cuda")
    with torch.no_grad():
        out = model(ids, use_cache=True)
        past = out.past_key_values
        step = torch.ones(batch, 1, dtype=torch.long, device="cuda")
        for _ in range(3):
            model(step, past_key_values=past, use_cache=True)  # warm-up (the cache grows by 3)
        torch.cuda.synchronize()
        n = 10
        start = time.perf_counter()
        for _ in range(n):
            out = model(step, past_key_values=out.past_key_values, use_cache=True)
        torch.cuda.synchronize()
        seconds = (time.perf_counter() - start) / n
    print(f"torch hf_decode_b{batch}_ctx{ctx} {batch / seconds:.1f} tokens/s ({seconds * 1e3:.3f} ms/step)")


def main():
    if not torch.cuda.is_available():
        print("SKIPPED: PyTorch sees no GPU")
        return
    for length in (1024, 4096):
        bench_sdpa(length)
    try:
        import transformers  # noqa: F401
    except ImportError as e:
        print(f"SKIPPED: Hugging Face comparison ({e})")
        return
    shape = dict(dim=2048, hidden=5632, layers=8, heads=32, kv_heads=8, vocab=32000, ctx=2048)
    model = build_llama(shape)
    for batch in (1, 8, 32):
        bench_hf_decode(model, batch, 512)


if __name__ == "__main__":
    main()
