"""A LLaMA / Qwen2-style decoder, cut into pipeline stages.

Paper: J. Hu, T. Jia, J. Zhu, Z. Yu, "Joint Training on AMD and NVIDIA GPUs",
https://arxiv.org/abs/2602.18007 (trained LLaMA-8B and Qwen2-7B; the architecture below is the
public one of those models, not something the paper specifies).

RMSNorm, rotary position embedding (RoPE), SwiGLU feed-forward, grouped-query attention and an
untied output head. `qwen2=True` adds the q/k/v biases of Qwen2 (its rope theta is in its config).
`TINY` runs on a CPU core; `LLAMA3_8B` and `QWEN2_7B` are the real shapes, used by the
performance model through `layer_params` / `flops_per_token` (never instantiated here).
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace

import torch
import torch.nn.functional as F
from torch import nn

from common.seed import Streams


@dataclass(frozen=True)
class ModelConfig:
    vocab: int = 256
    d_model: int = 64
    n_layers: int = 6
    n_heads: int = 4
    n_kv_heads: int = 2
    d_ff: int = 172
    seq_len: int = 64
    rope_theta: float = 500_000.0
    qwen2: bool = False
    norm_eps: float = 1e-5

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads

    def to_dict(self) -> dict:
        return asdict(self)


TINY = ModelConfig()
TINY_QWEN2 = replace(TINY, qwen2=True, rope_theta=1_000_000.0, norm_eps=1e-6)
# Hugging Face config.json of Meta-Llama-3-8B and Qwen2-7B
LLAMA3_8B = ModelConfig(vocab=128_256, d_model=4096, n_layers=32, n_heads=32, n_kv_heads=8, d_ff=14_336,
                        seq_len=4096, rope_theta=500_000.0)
QWEN2_7B = ModelConfig(vocab=152_064, d_model=3584, n_layers=28, n_heads=28, n_kv_heads=4, d_ff=18_944,
                       seq_len=4096, rope_theta=1_000_000.0, qwen2=True, norm_eps=1e-6)
CONFIGS = {"tiny": TINY, "tiny-qwen2": TINY_QWEN2, "llama3-8b": LLAMA3_8B, "qwen2-7b": QWEN2_7B}


def layer_params(cfg: ModelConfig) -> int:
    """Parameters of one decoder layer (attention + SwiGLU + two norms)."""
    d, kv = cfg.d_model, cfg.n_kv_heads * cfg.head_dim
    attn = d * d + 2 * d * kv + d * d + (d + 2 * kv if cfg.qwen2 else 0)
    return attn + 3 * d * cfg.d_ff + 2 * d


def flops_per_token(cfg: ModelConfig, part: str) -> float:
    """Training FLOPs (forward + backward = 3 x forward) per token of one layer or of the head.

    Dense matmuls cost 2 FLOPs per weight per token forward; causal attention adds
    2 * 2 * seq * d / 2 forward (scores and values, half the square)."""
    if part == "layer":
        fwd = 2 * layer_params(cfg) + 2 * cfg.seq_len * cfg.d_model
    elif part == "head":
        fwd = 2 * cfg.d_model * cfg.vocab
    else:
        raise ValueError(part)
    return 3.0 * fwd


class RMSNorm(nn.Module):
    def __init__(self, d: int, eps: float):
        super().__init__()
        self.eps, self.weight = eps, nn.Parameter(torch.ones(d))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight  # y = x / rms(x) * g


def rope_tables(cfg: ModelConfig, device=None):
    half = cfg.head_dim // 2
    inv = cfg.rope_theta ** (-torch.arange(half, dtype=torch.float64, device=device) / half)  # theta_i = b^(-2i/d)
    ang = torch.arange(cfg.seq_len, dtype=torch.float64, device=device)[:, None] * inv[None]
    return ang.cos().float(), ang.sin().float()


def apply_rope(x, cos, sin):
    """Rotate pairs (x_i, x_{i+d/2}) by angle m * theta_i (rotate-half form of RoPE)."""
    x1, x2 = x.chunk(2, dim=-1)
    t = x.shape[-2]
    c, s = cos[:t], sin[:t]
    return torch.cat([x1 * c - x2 * s, x1 * s + x2 * c], dim=-1)


class Attention(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.cfg = cfg
        hd, kv = cfg.head_dim, cfg.n_kv_heads * cfg.head_dim
        self.q = nn.Linear(cfg.d_model, cfg.d_model, bias=cfg.qwen2)
        self.k = nn.Linear(cfg.d_model, kv, bias=cfg.qwen2)
        self.v = nn.Linear(cfg.d_model, kv, bias=cfg.qwen2)
        self.o = nn.Linear(cfg.d_model, cfg.d_model, bias=False)
        self.scale = 1.0 / math.sqrt(hd)

    def forward(self, x, cos, sin):
        b, t, _ = x.shape
        c = self.cfg
        q = self.q(x).view(b, t, c.n_heads, c.head_dim).transpose(1, 2)
        k = self.k(x).view(b, t, c.n_kv_heads, c.head_dim).transpose(1, 2)
        v = self.v(x).view(b, t, c.n_kv_heads, c.head_dim).transpose(1, 2)
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        rep = c.n_heads // c.n_kv_heads  # grouped-query attention: each kv head serves `rep` query heads
        k, v = k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)
        att = (q @ k.transpose(-2, -1)) * self.scale  # softmax(q k^T / sqrt(d_h)) v
        mask = torch.ones(t, t, dtype=torch.bool, device=x.device).triu(1)
        att = att.masked_fill(mask, float("-inf")).softmax(-1)
        return self.o((att @ v).transpose(1, 2).reshape(b, t, c.d_model))


class SwiGLU(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.gate = nn.Linear(cfg.d_model, cfg.d_ff, bias=False)
        self.up = nn.Linear(cfg.d_model, cfg.d_ff, bias=False)
        self.down = nn.Linear(cfg.d_ff, cfg.d_model, bias=False)

    def forward(self, x):
        return self.down(F.silu(self.gate(x)) * self.up(x))  # W_2 (silu(W_1 x) * W_3 x)


class Block(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.attn_norm, self.attn = RMSNorm(cfg.d_model, cfg.norm_eps), Attention(cfg)
        self.ffn_norm, self.ffn = RMSNorm(cfg.d_model, cfg.norm_eps), SwiGLU(cfg)

    def forward(self, x, cos, sin):
        x = x + self.attn(self.attn_norm(x), cos, sin)  # pre-norm residual
        return x + self.ffn(self.ffn_norm(x))


class Decoder(nn.Module):
    """The whole model (one process); `stage()` cuts a pipeline stage out of it."""

    def __init__(self, cfg: ModelConfig, seed: int = 0):
        super().__init__()
        self.cfg = cfg
        with Streams(seed).torch_global("decoder-init"):  # the global generator forked, seeded from the stream
            self.embed = nn.Embedding(cfg.vocab, cfg.d_model)
            self.layers = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layers))
            self.norm = RMSNorm(cfg.d_model, cfg.norm_eps)
            self.head = nn.Linear(cfg.d_model, cfg.vocab, bias=False)  # untied from `embed`
            for name, p in self.named_parameters():
                if p.dim() == 2:
                    nn.init.normal_(p, std=0.02)
                elif name.endswith("bias"):
                    nn.init.zeros_(p)
        cos, sin = rope_tables(cfg)
        self.register_buffer("cos", cos, persistent=False)
        self.register_buffer("sin", sin, persistent=False)

    def forward(self, tokens):
        x = self.embed(tokens)
        for blk in self.layers:
            x = blk(x, self.cos, self.sin)
        return self.head(self.norm(x))

    def stage(self, layers: range, first: bool, last: bool) -> "Stage":
        return Stage(self, layers, first, last)


class Stage(nn.Module):
    """Layers `layers` of a Decoder, with the embedding on the first stage and norm+head on the last."""

    def __init__(self, full: Decoder, layers: range, first: bool, last: bool):
        super().__init__()
        self.first, self.last, self.layer_ids = first, last, list(layers)
        self.embed = full.embed if first else None
        self.layers = nn.ModuleList(full.layers[i] for i in layers)
        self.norm = full.norm if last else None
        self.head = full.head if last else None
        self.register_buffer("cos", full.cos, persistent=False)
        self.register_buffer("sin", full.sin, persistent=False)

    def forward(self, x):
        if self.first:
            x = self.embed(x)
        for blk in self.layers:
            x = blk(x, self.cos, self.sin)
        return self.head(self.norm(x)) if self.last else x


def lm_loss(logits, targets):
    """Mean next-token cross-entropy in nats."""
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
