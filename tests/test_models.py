"""Model registry: embedded models build once into the cache and chat through their templates."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from transformers import AutoModelForCausalLM, AutoTokenizer

from aac.models import resolve_model

ROOT = Path(__file__).resolve().parents[1]


def _chat(path: str, max_new_tokens: int = 12) -> tuple[str, int]:
    tok = AutoTokenizer.from_pretrained(path)
    model = AutoModelForCausalLM.from_pretrained(path)
    enc = tok.apply_chat_template(
        [{"role": "user", "content": "Describe what sorted() does."}],
        add_generation_prompt=True, return_tensors="pt", return_dict=True,
    )
    out = model.generate(**enc, max_new_tokens=max_new_tokens, do_sample=False)
    new = out[0][enc["input_ids"].shape[1]:]
    return tok.decode(new, skip_special_tokens=True), len(new)


def test_tiny_qwen3_is_tiny_and_generates(tiny_model_path):
    assert (Path(tiny_model_path) / "model.safetensors").exists()
    model = AutoModelForCausalLM.from_pretrained(tiny_model_path)
    assert model.config.model_type == "qwen3"
    assert 50_000 < sum(p.numel() for p in model.parameters()) < 1_000_000
    tok = AutoTokenizer.from_pretrained(tiny_model_path)
    prompt = tok.apply_chat_template([{"role": "user", "content": "hi"}], tokenize=False,
                                     add_generation_prompt=True)
    assert prompt == "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
    _, n = _chat(tiny_model_path)
    assert n > 0


def test_tiny_qwen3_build_is_deterministic(tmp_path, tiny_model_path):
    env = dict(os.environ, AAC_HOME=str(tmp_path))
    code = "from aac.models import resolve_model; print(resolve_model('tiny_qwen3'))"
    path = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          check=True).stdout.strip().splitlines()[-1]
    a = (Path(path) / "model.safetensors").read_bytes()
    b = (Path(tiny_model_path) / "model.safetensors").read_bytes()
    assert a == b
    assert (Path(path) / "tokenizer.json").read_text() == (Path(tiny_model_path) / "tokenizer.json").read_text()


@pytest.mark.slow
def test_smollm2_loads_from_cache_and_chats(smollm2_path):
    assert Path(smollm2_path, "model.safetensors").exists()
    assert resolve_model("smollm2_135m") == smollm2_path  # second call: cached, no rebuild
    text, n = _chat(smollm2_path, 20)
    assert n > 3 and len(text.split()) >= 2


def test_hub_ids_pass_through(tmp_path):
    assert resolve_model("qwen3_8b") == "Qwen/Qwen3-8B"
    assert resolve_model(str(tmp_path)) == str(tmp_path)


def test_second_make_does_not_reinstall():
    # the install stamp is newer than its inputs: `make -q install` says "up to date"
    result = subprocess.run(["make", "-q", "install"], cwd=ROOT)
    assert result.returncode == 0


def test_tiny_gqa_groups_its_heads_as_the_flagship_does():
    from aac.models import QWEN3_8B

    model = AutoModelForCausalLM.from_pretrained(resolve_model("tiny_qwen3_gqa"))
    c = model.config
    assert (c.num_attention_heads, c.num_key_value_heads) == (4, 2)  # 2 query heads per KV head
    assert QWEN3_8B.num_attention_heads // QWEN3_8B.num_key_value_heads == 4  # Qwen3-8B: 4 per KV head


def test_the_random_flagship_is_built_at_any_shape_with_a_real_tokenizer(tmp_path):
    """qwen3_8b_random's builder (at a small shape: the 8B writes 16 GB), and its registry entry's shape."""
    import json

    from aac.models import QWEN3_8B, REGISTRY, Shape, _build_qwen3, _tiny_tokenizer

    small = Shape(vocab_size=2048, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=1, head_dim=16)
    _build_qwen3(tmp_path, shape=small, dtype="bfloat16", tokenizer=_tiny_tokenizer)
    config = json.loads((tmp_path / "config.json").read_text())
    assert {k: config[k] for k in vars(small)} == vars(small) and config["dtype"] == "bfloat16"
    assert config["rope_parameters"]["rope_theta"] == 1e6 and config["tie_word_embeddings"] is False
    assert config["eos_token_id"] == AutoTokenizer.from_pretrained(tmp_path).convert_tokens_to_ids("<|im_end|>")
    entry = REGISTRY["qwen3_8b_random"].builder
    assert entry.keywords["shape"] == QWEN3_8B and entry.keywords["dtype"] == "bfloat16"
    assert (QWEN3_8B.hidden_size, QWEN3_8B.num_hidden_layers, QWEN3_8B.intermediate_size) == (4096, 36, 12288)


def test_a_random_shape_is_built_once_on_the_cpu_in_shards_and_every_piece_loads_it(tmp_path, monkeypatch):
    """qwen3_8b_random's path at a tiny shape: `build_run` builds the model in the driver, before any piece
    starts (shard by shard, on the CPU), and the engine and the learner load that folder; nothing builds
    it again."""

    import torch
    from safetensors.torch import load_file

    from aac import models
    from aac.assembly import build_run
    from aac.config import compose

    small = models.Shape(vocab_size=1024, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, head_dim=16)
    builds = []

    def build(out):
        builds.append(torch.cuda.is_initialized())
        models._build_qwen3(out, shape=small, dtype="float32", tokenizer=models._tiny_tokenizer)

    monkeypatch.setenv("AAC_HOME", str(tmp_path))
    monkeypatch.setattr(models, "SHARD_BYTES", 100_000)  # several shards at this size
    monkeypatch.setitem(models.REGISTRY, "random_small", models.ModelSpec("random_small", "random_small", build,
                                                                        shape=small))
    run = build_run(compose("+recipe=tiny", "model.name=random_small", "rollout.placement=local"))
    try:
        folder = tmp_path / "models" / "random_small"
        shards = sorted(folder.glob("model-*.safetensors"))
        assert builds == [False] and len(shards) > 1  # once, CUDA never touched
        on_disk = {k: v for s in shards for k, v in load_file(s).items()}
        key = "model.layers.1.mlp.down_proj.weight"
        learner = dict(run.learner._obj.policy.get_base_model().named_parameters())  # local placement: here
        torch.testing.assert_close(learner[key.replace("weight", "base_layer.weight")], on_disk[key])
        engine = getattr(run.actor, "engine", run.actor)
        torch.testing.assert_close(dict(engine.model.named_parameters())[key], on_disk[key])
    finally:
        run.close()
    models.resolve_model("random_small")
    assert len(builds) == 1
