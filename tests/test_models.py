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


def _hub_stand_in(repo: str, folder: Path):
    """A local HTTP server speaking the part of the HF hub's API that `snapshot_download` uses (the revision,
    its file tree, each file's metadata and bytes), serving `folder` as `repo`; returns it and its log of
    requests."""
    import hashlib
    import json
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    files = {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}
    commit = hashlib.sha1(b"".join(files.values())).hexdigest()
    requests: list[tuple[str, str]] = []

    class Hub(BaseHTTPRequestHandler):
        def log_message(self, *args):  # keep test output quiet
            pass

        def _json(self, body: object) -> None:
            data = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _file(self, send_body: bool) -> None:
            name = self.path.split("?")[0].removeprefix(f"/{repo}/resolve/").split("/", 1)[-1]
            if name not in files:
                self.send_response(404)
                self.end_headers()
                return
            self.send_response(200)
            self.send_header("X-Repo-Commit", commit)
            self.send_header("ETag", f'"{hashlib.sha256(files[name]).hexdigest()}"')
            self.send_header("Content-Length", str(len(files[name])))
            self.end_headers()
            if send_body:
                self.wfile.write(files[name])

        def do_HEAD(self):  # noqa: N802  (http.server's name)
            requests.append(("HEAD", self.path))
            self._file(False)

        def do_GET(self):  # noqa: N802
            requests.append(("GET", self.path))
            if self.path.startswith(f"/api/models/{repo}/tree/"):
                self._json([{"type": "file", "path": k, "size": len(v), "oid": hashlib.sha1(v).hexdigest()}
                            for k, v in files.items()])
            elif self.path.startswith(f"/api/models/{repo}/revision/"):
                self._json({"id": repo, "sha": commit, "siblings": [{"rfilename": k} for k in files]})
            else:
                self._file(True)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Hub)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, requests, files, commit


def test_a_hub_model_is_downloaded_once_into_the_hf_cache_then_found_there(tmp_path, tiny_model_path):
    """`local_model` on a hub id: not in the HF cache, it is downloaded there (each file once, from a local
    stand-in for the hub); asked again, in another process, it is found there and nothing is requested; the
    same snapshot folder both times. With the hub gone and the cache empty: one line naming the cache."""
    server, requests, files, commit = _hub_stand_in("aac-test/tiny", Path(tiny_model_path))
    env = dict(os.environ, HF_ENDPOINT=f"http://127.0.0.1:{server.server_port}", HF_HUB_CACHE=str(tmp_path / "hub"),
               HF_HUB_DISABLE_TELEMETRY="1", PYTHONPATH=str(ROOT))
    code = "from aac.models import local_model; print(local_model('aac-test/tiny'))"
    try:
        paths = []
        for _ in range(2):
            out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
            assert out.returncode == 0, out.stderr[-2000:]
            paths.append(out.stdout.strip().splitlines()[-1])
            if len(paths) == 1:
                downloaded = sorted(p.rsplit("/", 1)[1] for m, p in requests if m == "GET" and "/resolve/" in p)
                assert downloaded == sorted(files)  # every file, once
                requests.clear()
        assert requests == []  # the second time: found in the cache, the hub never asked
        assert paths[0] == paths[1] == str(tmp_path / "hub" / "models--aac-test--tiny" / "snapshots" / commit)
        assert sorted(p.name for p in Path(paths[0]).iterdir()) == sorted(files)
    finally:
        server.shutdown()
        server.server_close()
    env["HF_HUB_CACHE"] = str(tmp_path / "empty")  # the stand-in is down now: connections are refused
    out = subprocess.run([sys.executable, "-m", "aac.train", "model.name=aac-test/tiny", "+recipe=tiny",
                          f"out_dir={tmp_path / 'run'}", "rollout.placement=local"], env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 1 and out.stderr.strip().splitlines()[-1].startswith(
        f"aac: model not found: aac-test/tiny: no registry name (aac/models.py), no local folder, not in the HF cache "
        f"({tmp_path / 'empty'}) and its download failed"), out.stderr[-2000:]
