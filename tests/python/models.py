"""Decoder models written in plain PyTorch for the export tests: a
Llama-style decoder (RMSNorm, rotary position embeddings, SwiGLU, causal
attention through a mask buffer) and a GPT-2-style one (LayerNorm, biases,
GELU tanh, masked_fill with -inf, fused qkv projection split by chunk)."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        var = x.pow(2).mean(-1, keepdim=True)
        return x * torch.rsqrt(var + self.eps) * self.weight


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class Rotary(nn.Module):
    def __init__(self, dim, base=10000.0):
        super().__init__()
        inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2).float() / dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def forward(self, x):
        seq = x.shape[-2]
        t = torch.arange(seq, dtype=torch.float32)
        freqs = torch.outer(t, self.inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos()[None, None], emb.sin()[None, None]


class LlamaAttention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads, self.head_dim = heads, dim // heads
        self.q_proj = nn.Linear(dim, dim, bias=False)
        self.k_proj = nn.Linear(dim, dim, bias=False)
        self.v_proj = nn.Linear(dim, dim, bias=False)
        self.o_proj = nn.Linear(dim, dim, bias=False)
        self.rotary = Rotary(self.head_dim)

    def forward(self, x):
        b, s, d = x.shape
        q = self.q_proj(x).view(b, s, self.heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(b, s, self.heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(b, s, self.heads, self.head_dim).transpose(1, 2)
        cos, sin = self.rotary(v)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        scores = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.head_dim)
        mask = torch.full((s, s), float("-inf")).triu(1)
        probs = F.softmax(scores + mask, dim=-1)
        out = torch.matmul(probs, v).transpose(1, 2).reshape(b, s, d)
        return self.o_proj(out)


class SwiGLU(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.gate_proj = nn.Linear(dim, hidden, bias=False)
        self.up_proj = nn.Linear(dim, hidden, bias=False)
        self.down_proj = nn.Linear(hidden, dim, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class LlamaLayer(nn.Module):
    def __init__(self, dim, heads, hidden):
        super().__init__()
        self.input_layernorm = RMSNorm(dim)
        self.self_attn = LlamaAttention(dim, heads)
        self.post_attention_layernorm = RMSNorm(dim)
        self.mlp = SwiGLU(dim, hidden)

    def forward(self, x):
        h = x + self.self_attn(self.input_layernorm(x))
        return h + self.mlp(self.post_attention_layernorm(h))


class LayerStack(nn.Module):
    """self.layers applied in order, as a Python loop or (scan=True) with
    hloscope.scan_layers, then self.norm."""

    def __init__(self, layers, norm, scan=False):
        super().__init__()
        self.scan = scan
        self.layers = nn.ModuleList(layers)
        self.norm = norm

    def forward(self, x):
        if self.scan:
            from hloscope import scan_layers
            x = scan_layers(self.layers, x)
        else:
            for layer in self.layers:
                x = layer(x)
        return self.norm(x)


class Llama(LayerStack):
    def __init__(self, dim=64, heads=4, hidden=172, n_layers=8, scan=False):
        super().__init__((LlamaLayer(dim, heads, hidden)
                          for _ in range(n_layers)), RMSNorm(dim), scan)


class GPT2Block(nn.Module):
    def __init__(self, dim, heads, max_seq=64):
        super().__init__()
        self.heads = heads
        self.ln_1 = nn.LayerNorm(dim)
        self.c_attn = nn.Linear(dim, 3 * dim)
        self.c_proj = nn.Linear(dim, dim)
        self.ln_2 = nn.LayerNorm(dim)
        self.fc = nn.Linear(dim, 4 * dim)
        self.proj = nn.Linear(4 * dim, dim)
        self.attn_dropout = nn.Dropout(0.1)
        self.register_buffer(
            "bias", torch.tril(torch.ones(max_seq, max_seq, dtype=torch.bool))
            .view(1, 1, max_seq, max_seq))

    def attn(self, x):
        b, s, d = x.size()
        hd = d // self.heads
        q, k, v = self.c_attn(x).split(d, dim=2)
        q = q.view(b, s, self.heads, hd).permute(0, 2, 1, 3)
        k = k.view(b, s, self.heads, hd).permute(0, 2, 1, 3)
        v = v.view(b, s, self.heads, hd).permute(0, 2, 1, 3)
        w = q @ k.transpose(-1, -2) * (1.0 / math.sqrt(hd))
        w = w.masked_fill(~self.bias[:, :, :s, :s], float("-inf"))
        w = self.attn_dropout(w.softmax(dim=-1))
        y = (w @ v).transpose(1, 2).contiguous().view(b, s, d)
        return self.c_proj(y)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.proj(F.gelu(self.fc(self.ln_2(x)), approximate="tanh"))


class GPT2(nn.Module):
    def __init__(self, dim=64, heads=4, n_layers=4, max_seq=64):
        super().__init__()
        self.wpe = nn.Parameter(torch.randn(max_seq, dim) * 0.02)
        self.h = nn.ModuleList(GPT2Block(dim, heads, max_seq)
                               for _ in range(n_layers))
        self.ln_f = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, 96, bias=False)

    def forward(self, x):
        x = x + self.wpe[: x.shape[1]]
        for block in self.h:
            x = block(x)
        return self.head(self.ln_f(x))


class FxBlock(nn.Module):
    """A pre-norm decoder layer that torch.fx traces symbolically (no
    Python ints from shapes): the causal mask from full_like(...).triu(1),
    heads split with view(..., -1)."""

    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.norm1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.out = nn.Linear(dim, dim, bias=False)
        self.norm2 = nn.LayerNorm(dim)
        self.up = nn.Linear(dim, 4 * dim)
        self.down = nn.Linear(4 * dim, dim)

    def forward(self, x):
        h = self.norm1(x)
        qkv = self.qkv(h).chunk(3, dim=-1)  # indexed: torch 1.13's fx
        q, k, v = qkv[0], qkv[1], qkv[2]    # cannot unpack on Python 3.11
        shape = (x.shape[0], x.shape[1], self.heads, -1)
        q = q.view(shape).transpose(1, 2)
        k = k.view(shape).transpose(1, 2)
        v = v.view(shape).transpose(1, 2)
        s = q @ k.transpose(-2, -1) * q.shape[-1] ** -0.5
        s = s + torch.full_like(s, float("-inf")).triu(1)
        a = (s.softmax(-1) @ v).transpose(1, 2).reshape(x.shape)
        x = x + self.out(a)
        return x + self.down(F.gelu(self.up(self.norm2(x))))


class FxDecoder(LayerStack):
    def __init__(self, dim=256, heads=8, n_layers=32, scan=False):
        super().__init__((FxBlock(dim, heads) for _ in range(n_layers)),
                         nn.LayerNorm(dim), scan)


class TorchEncoder(nn.Module):
    """torch.nn's own Transformer layers (nobody here wrote them): a causal
    pre-norm encoder stack, batch first, GELU, and a post-norm layer in
    sequence-first layout without a mask."""

    def __init__(self, dim=64, heads=4, n_layers=3):
        super().__init__()
        layer = nn.TransformerEncoderLayer(dim, heads, 2 * dim, dropout=0.1,
                                           activation="gelu",
                                           batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, n_layers,
                                             enable_nested_tensor=False)
        self.seq_first = nn.TransformerEncoderLayer(dim, heads, 2 * dim,
                                                    dropout=0.1)

    def forward(self, x):
        mask = nn.Transformer.generate_square_subsequent_mask(x.shape[1])
        h = self.encoder(x, mask=mask)
        return self.seq_first(h.transpose(0, 1)).transpose(0, 1)


class TinyLM(nn.Module):
    """Token ids in, logits out: an nn.Embedding, learned positions, two
    Llama layers, a final norm and an untied head."""

    def __init__(self, vocab=300, dim=32, heads=4, n_layers=2):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab, dim)
        self.pos = nn.Parameter(torch.randn(64, dim) * 0.02)
        self.layers = nn.ModuleList(LlamaLayer(dim, heads, 2 * dim)
                                    for _ in range(n_layers))
        self.norm = RMSNorm(dim)
        self.lm_head = nn.Linear(dim, vocab, bias=False)

    def forward(self, ids):
        x = self.embed_tokens(ids) + self.pos[: ids.shape[1]]
        for layer in self.layers:
            x = layer(x)
        return self.lm_head(self.norm(x))


class SmallCNN(nn.Module):
    """A small CNN in plain PyTorch with what torchvision's models use: a
    strided stem with batch norm and ReLU6, max pooling, a residual block
    with an in-place add, a depthwise + pointwise pair with hardswish,
    average pooling (count_include_pad=False), F.adaptive_avg_pool2d,
    torch.flatten, Dropout and a Linear head."""

    def __init__(self, classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, stride=2, padding=1,
                                            bias=False),
                                  nn.BatchNorm2d(16), nn.ReLU6(inplace=True))
        self.pool = nn.MaxPool2d(3, stride=2, padding=1)
        self.conv1 = nn.Conv2d(16, 16, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        self.dw = nn.Conv2d(16, 16, 3, padding=2, dilation=2, groups=16)
        self.pw = nn.Conv2d(16, 24, 1)
        self.act = nn.Hardswish()
        self.avg = nn.AvgPool2d(3, stride=1, padding=1,
                                count_include_pad=False)
        self.drop = nn.Dropout(0.2)
        self.fc = nn.Linear(24, classes)

    def forward(self, x):
        x = self.pool(self.stem(x))
        identity = x
        out = F.relu(self.bn1(self.conv1(x)))
        out += identity
        out = self.act(self.pw(self.dw(out)))
        out = self.avg(out)
        out = F.adaptive_avg_pool2d(out, (1, 1))
        return self.fc(self.drop(torch.flatten(out, 1)))
