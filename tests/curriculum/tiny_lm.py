"""A tiny randomly initialised language model and a character-level tokenizer, built here (no hub download).

The trainers' tests need a real ``transformers`` model and tokenizer; these are the smallest that the
libraries accept: a two-layer Llama of width 16 over a vocabulary of a few characters.
"""

from __future__ import annotations

import os
from typing import Any, cast

# Nothing here comes from the hub; set before transformers / huggingface_hub read it (at their import).
os.environ["HF_HUB_OFFLINE"] = "1"

CHARACTERS = "abcdefghijklmnopqrstuvwxyz0123456789 ?:>"
SPECIALS = ("<pad>", "<eos>", "<unk>")
CHAT_TEMPLATE = (
    "{% for message in messages %}{{ message['content'] }}{% endfor %}"
    "{% if add_generation_prompt %}>{% endif %}"
)


def tokenizer(characters: str = CHARACTERS) -> Any:
    """A ``PreTrainedTokenizerFast`` with one token per character of ``characters``."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {token: index for index, token in enumerate((*SPECIALS, *characters))}
    core = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.Split("", behavior="isolated")
    core.decoder = decoders.Fuse()
    fast = cast(Any, PreTrainedTokenizerFast)(
        tokenizer_object=core, pad_token="<pad>", eos_token="<eos>", unk_token="<unk>", padding_side="left"
    )
    fast.chat_template = CHAT_TEMPLATE
    return fast


def model(vocab_size: int, seed: int = 0) -> Any:
    """A randomly initialised two-layer Llama (about 6 thousand parameters) on the CPU."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=64,
        pad_token_id=0,
        eos_token_id=1,
        bos_token_id=None,
        tie_word_embeddings=True,
    )
    return cast(Any, LlamaForCausalLM)(config)
