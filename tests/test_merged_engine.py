"""The merged-LoRA vLLM engine (`rollout.lora_mode=merged`): exact, reloaded in place, checked by the sync."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from aac.engines import EngineError, GenRequest, Sampling, make_engine

pytestmark = pytest.mark.slow

CHATS = [[{"role": "user", "content": text}] for text in (
    "Name three prime numbers and say why they are prime.",
    "What does a Python function that reverses a list return for [1, 2, 3]?",
    "Describe a hidden function that returns the sum of its inputs.")]


@pytest.fixture(scope="module")
def merged_engine(smollm2_path):
    pytest.importorskip("vllm")
    engine = make_engine("vllm", smollm2_path, dtype="float32", max_model_len=1024, enable_lora=True,
                         lora_mode="merged", seed=0, kv_cache_gb=1, enforce_eager=True)
    yield engine
    engine.close()


def _greedy(engine, adapter):
    reqs = [GenRequest(chat, Sampling(temperature=0.0, max_tokens=12), adapter) for chat in CHATS]
    return [r.token_ids for r in engine.generate(reqs)]


def test_merged_engine_greedy_tokens_equal_the_peft_models(merged_engine, hf_smollm2, make_random_lora,
                                                            smollm2_path):
    """float32: the merged weights give the learner's (peft's) greedy tokens, for one adapter and then
    for the next one on the same prompts (so the prefix cache of the old weights was dropped)."""
    base = _greedy(hf_smollm2, None)
    for version, seed in ((1, 1), (2, 2)):  # the adapters test_engines.py made (built once per session)
        lora = make_random_lora(smollm2_path, seed)
        merged_engine.load_adapter("actor", lora, version)
        hf_smollm2.load_adapter("actor", lora, version)
        ours, peft = _greedy(merged_engine, "actor"), _greedy(hf_smollm2, "actor")
        assert ours == peft
        assert ours != base  # the adapter changes the text: the test can fail
    assert merged_engine.adapter_version("actor") == 2
    with pytest.raises(EngineError, match="base engine"):
        merged_engine.generate([GenRequest(CHATS[0], Sampling(max_tokens=4), None)])


def test_sync_check_holds_for_the_merged_engine_and_catches_a_stale_one(merged_engine, smollm2_path, tmp_path):
    """The trainer's adapter sync with the real learner: after an update the merged engine's log-probs
    match the learner's; with the sync skipped the engine keeps the previous weights and the check fires."""
    from omegaconf import OmegaConf

    from aac.config import LearnerConfig, TrainConfig
    from aac.learner import Learner
    from aac.training import ACTOR, SyncError
    from aac.training.sync import FP32_TOLERANCE, AdapterSync

    learner = Learner(LearnerConfig(backend="torch", lora_r=8, lora_alpha=16), smollm2_path, seed=0)
    cfg = OmegaConf.structured(TrainConfig)
    adapter_sync = AdapterSync(SimpleNamespace(learner=learner, actor=merged_engine), tmp_path / "adapters",
                               sync_adapter=True, check_sync=True, tolerance=FP32_TOLERANCE, keep=cfg.keep_adapters)
    sync = adapter_sync.sync
    sync(0)
    out = merged_engine.generate([GenRequest(CHATS[0], Sampling(temperature=0.0, max_tokens=24), ACTOR)])[0]
    probe = [(out.prompt_ids, out.token_ids)]

    def update() -> list[float]:
        """An optimizer step's effect (B no longer 0); returns the log-probs before it."""
        before = [learner.token_logprobs(*probe[0])]
        with torch.no_grad():
            for name, param in learner.policy.named_parameters():
                if "lora_B" in name:
                    param.normal_(0.0, 0.05)
        return before

    synced = sync(1, probe, update())
    assert synced["sync/logprob_gap"] < 1e-3
    assert synced["sync/logprob_gap_previous"] > FP32_TOLERANCE
    adapter_sync.sync_adapter = False
    with pytest.raises(SyncError, match="stale adapter"):
        sync(2, probe, update())
