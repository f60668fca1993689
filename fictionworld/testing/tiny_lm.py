"""A tiny language model and tokenizer built on this machine, for trainer tests and demos that
cannot download weights: **not a real model**. The tokenizer is a byte-level BPE trained here on
a corpus you give (world pages, the task prompts, tool calls), with Qwen's chat tokens; its chat
template is one a trainer ships (TRL's ``qwen3.jinja`` by default, read from the installed
package, never copied), so the trainer's own tool-call parsing and response schemas apply. The
model is a Qwen3 architecture of a few hundred thousand parameters, initialised from a seed.

Needs ``transformers`` and ``tokenizers`` (the ``[trl]``/``[verl]`` extras); imported only here.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["CHAT_TOKENS", "build_tokenizer", "tiny_model", "qwen3_chat_template"]

# Qwen's chat tokens: the first three are special (skipped when decoding); the tool tags are
# ordinary added tokens, as in Qwen's own vocabulary, so decoded text keeps them.
SPECIAL = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
CHAT_TOKENS = ("<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>", "<think>", "</think>")


def qwen3_chat_template() -> str:
    """TRL's Qwen3 chat template, as the installed ``trl`` package holds it."""
    from trl.chat_template_utils import qwen3_chat_template as template

    return template


def build_tokenizer(corpus: Iterable[str], *, vocab_size: int = 2048, chat_template: str | None = None):
    """A ``PreTrainedTokenizerFast`` trained on ``corpus`` (byte-level BPE: any text encodes, and
    decoding gives it back exactly), with :data:`SPECIAL` and :data:`CHAT_TOKENS` added, padding
    on ``<|endoftext|>`` and ``chat_template`` (default :func:`qwen3_chat_template`)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=list(SPECIAL),
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)  # fmt: skip
    tok.train_from_iterator(corpus, trainer=trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                   bos_token=None, unk_token=None, clean_up_tokenization_spaces=False)  # fmt: skip
    fast.add_special_tokens({"additional_special_tokens": [SPECIAL[1]]})
    fast.add_tokens(list(CHAT_TOKENS), special_tokens=False)
    fast.chat_template = chat_template if chat_template is not None else qwen3_chat_template()
    return fast


def tiny_model(tokenizer, *, hidden: int = 64, layers: int = 2, heads: int = 4, seed: int = 0,
               max_positions: int = 8192, rope_theta: float | None = None):  # fmt: skip
    """A Qwen3 causal LM sized for a CPU test (``hidden`` × ``layers``), its vocabulary the
    tokenizer's, its weights drawn from ``seed``. ``rope_theta`` (default: Qwen3's 1e6) set low
    (~20) lets so small a model tell neighbouring positions apart: it then learns the chat
    format's fixed token sequences (``<think>\n\n</think>…``) in a hundred steps, not thousands."""
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    torch.manual_seed(seed)
    config = Qwen3Config(
        vocab_size=len(tokenizer),
        hidden_size=hidden,
        intermediate_size=hidden * 2,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=heads,
        head_dim=hidden // heads,
        max_position_embeddings=max_positions,
        tie_word_embeddings=True,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=None,
        **({} if rope_theta is None else {"rope_theta": float(rope_theta)}),
    )
    return Qwen3ForCausalLM(config)
