"""Example model: a Hugging Face LlamaForCausalLM (4 layers, hidden 256) built from a config
with random weights (no download: HF_HUB_OFFLINE), as an nn.Sequential of pipeline layers.

Invariant: the Sequential computes exactly LlamaForCausalLM's logits (the same modules, the
same rotary position embeddings, causal attention through SDPA), one child per profile layer:
`embed`, `layer_0` .. `layer_3`, `head` (final RMSNorm + lm_head). make_batch gives token ids
and next-token labels; loss_fn is the causal-LM cross-entropy.

    python -m pipescope_torch profile examples/llama.py:build_model --batch-sizes 1,2,4 -o llama.json
    python -m pipescope_torch run --plan plan.json --model examples/llama.py:build_model -o meas.json
"""

import os
from collections import OrderedDict

import torch
import torch.nn as nn

os.environ.setdefault("HF_HUB_OFFLINE", "1")

SEQUENCE = 64
CONFIG = dict(vocab_size=1024, hidden_size=256, intermediate_size=688, num_hidden_layers=4,
              num_attention_heads=8, num_key_value_heads=4, max_position_embeddings=SEQUENCE,
              tie_word_embeddings=False)


def hf_model():
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(**CONFIG)
    config._attn_implementation = "sdpa"
    return LlamaForCausalLM(config)


class Embed(nn.Module):
    def __init__(self, embed_tokens):
        super().__init__()
        self.embed_tokens = embed_tokens

    def forward(self, ids):
        return self.embed_tokens(ids)


class Block(nn.Module):
    """One decoder layer with its rotary embeddings computed from the positions 0..s-1."""

    def __init__(self, layer, rotary):
        super().__init__()
        self.layer = layer
        self.rotary = rotary

    def forward(self, hidden):
        positions = torch.arange(hidden.shape[1], device=hidden.device).unsqueeze(0)
        cos_sin = self.rotary(hidden, positions)
        out = self.layer(hidden, attention_mask=None, position_ids=positions, position_embeddings=cos_sin)
        return out[0] if isinstance(out, tuple) else out


class Head(nn.Module):
    def __init__(self, norm, lm_head):
        super().__init__()
        self.norm = norm
        self.lm_head = lm_head

    def forward(self, hidden):
        return self.lm_head(self.norm(hidden))


def build_model() -> nn.Module:
    hf = hf_model()
    body = hf.model
    layers = [("embed", Embed(body.embed_tokens))]
    layers += [(f"layer_{i}", Block(layer, body.rotary_emb)) for i, layer in enumerate(body.layers)]
    layers.append(("head", Head(body.norm, hf.lm_head)))
    return nn.Sequential(OrderedDict(layers))


def make_batch(batch_size: int, seed: int):
    gen = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, CONFIG["vocab_size"], (batch_size, SEQUENCE + 1), generator=gen)
    return ids[:, :-1].contiguous(), ids[:, 1:].contiguous()


def loss_fn(logits, labels):
    return nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1))
