"""Every setting of the build path reaches behaviour: the critic's backend, the argument rule, GPU
placement, per-step critic health, the eval protocol of held-out episodes."""

from __future__ import annotations

import os

import pytest
from doubles import GenerateOnly

from aac.config import compose
from aac.metrics import read
from aac.training import Trainer

CHEAP = ("rollout.placement=local", "max_steps=1", "save_every=100", "env.max_steps=3",
         "rollout.max_tokens_per_turn=8", "rollout.functions_per_step=1", "rollout.group_size=2")


def _train(cfg, out):
    trainer = Trainer(cfg, out)
    try:
        trainer.run()
        return trainer, read(out / "metrics.jsonl")
    finally:
        trainer.close()


@pytest.fixture
def judge_endpoint(serve_chat):
    """An OpenAI-compatible chat endpoint that rates everything 7 and keeps what it was asked."""
    with serve_chat(lambda body: "Consistent.\nRating: 7") as served:
        yield served


def test_critic_backend_openai_sends_every_judgment_to_the_endpoint_and_none_to_the_actor(tmp_path, judge_endpoint):
    url, asked = judge_endpoint
    cfg = compose("+recipe=tiny", *CHEAP, "critic.backend=openai", f"critic.openai.base_url={url}",
                  "critic.openai.model=judge-7", "critic.cache=false")
    trainer, rows = _train(cfg, tmp_path / "run")
    judged = rows[0]["critic/judgments"]
    turns = rows[0]["episode/turns_mean"] * 2
    # every judgment asked the endpoint, except duplicates of one in the same batch (asked once)
    assert judged >= 1 and len(asked) == rows[0]["critic/requests"] == judged - rows[0]["critic/cache_hits"]
    assert all(a["model"] == "judge-7" for a in asked) and rows[0]["critic/fallbacks"] == 0
    assert trainer.engine.stats.requests == turns  # the actor's engine served the actor's turns only


def test_by_default_the_critic_shares_the_actor_engine(tmp_path):
    trainer, rows = _train(compose("+recipe=tiny", *CHEAP), tmp_path / "run")
    turns = rows[0]["episode/turns_mean"] * 2
    assert trainer.engine.stats.requests == turns + rows[0]["critic/requests"]


class _OneReply(GenerateOnly):
    """An actor (and critic) that gives one reply, which parses in every phase."""

    def __init__(self, reply: str):
        self.reply = reply

    def generate(self, requests):
        from aac.engines import GenResult

        return [GenResult(self.reply, [0], [1], [0.0], "stop", r.adapter, None) for r in requests]


def test_spread_list_args_changes_the_training_call(tmp_path):
    """The same episode calls `([1, 2])` as f(1, 2) by default and as f([1, 2]) with the option off."""
    from aac.assembly import PlacedRolloutWorker
    from aac.config import CriticConfig, EnvConfig, RewardConfig, RolloutConfig
    from aac.env.instance import Instance
    from aac.env.protocol import ProtocolConfig
    from aac.rollout.driver import EpisodeSpec

    inst = Instance(uid="t/0", source="t", code="def test_func(*args):\n    return len(args)\n",
                    description="counts its arguments", header="def test_func(*args):",
                    train_examples=[("(1,)", 1), ("(1, 2)", 2)], test_examples=[], all_examples=[])
    engine = _OneReply("Input: ([1, 2])\nDecision: YES\nSummary: counts its arguments.\nRating: 5")
    outputs = {}
    for spread in (True, False):
        env = EnvConfig(spread_list_args=spread)
        env.sandbox.workers = 1
        worker = PlacedRolloutWorker(RolloutConfig(max_tokens_per_turn=8), env, CriticConfig(), RewardConfig(t_max=3),
                               ProtocolConfig(max_steps=3), engine, engine)
        try:
            batch = worker.run([EpisodeSpec(0, inst)], adapter=None, seed=0)
        finally:
            worker.close()
        outputs[spread] = batch.episodes[0].record["observations"][-1][1]
    assert outputs == {True: "2", False: "1"}


def test_held_out_evaluation_plays_the_eval_protocol_and_reports_what_aac_eval_reports(tmp_path):
    cfg = compose("+recipe=tiny", *CHEAP, "eval_every=1", "eval_limit=2", "eval.max_calls=1",
                  "eval.max_tokens_per_turn=8", "eval.judge_max_tokens=8", "eval.coder_max_tokens=8")
    trainer, rows = _train(cfg, tmp_path / "run")
    row = rows[0]
    # one call: every held-out episode ends after its first cycle (3 turns), not at env.max_steps
    assert row["eval/episode/turns_mean"] <= 3 and row["eval/queries_mean"] <= 1
    for key in ("eval/description_score", "eval/code_match", "eval/concluded_pct", "eval/format_error_rate"):
        assert key in row
    assert 1.0 <= row["eval/description_score"] <= 5.0


def test_critic_health_is_per_step_and_merged_across_workers(tmp_path):
    cfg = compose("+recipe=tiny", *CHEAP, "max_steps=2", "rollout.num_workers=2", "rollout.group_size=4")
    _, rows = _train(cfg, tmp_path / "run")
    for row in rows:
        assert 0.0 <= row["critic/cache_hit_rate"] <= 1.0 and 0.0 <= row["critic/parse_failure_rate"] <= 1.0
        # this step's judgments only: at most one per reasoning or reflect turn of its 4 episodes
        assert row["critic/judgments"] <= row["episode/turns_mean"] * 4
    assert rows[1]["critic/judgments"] > 0


@pytest.mark.slow
def test_qwen3_8b_places_engine_and_learner_on_different_gpus(monkeypatch):
    """Ray with two fake GPUs: pieces asking what the flagship recipe's engine and learner ask (a GPU each, the
    learner with its process environment) see different CUDA_VISIBLE_DEVICES, `rollout.cpu_threads` threads and the
    learner's allocator. Light pieces: the real EngineHost (vLLM) and Learner (DeepSpeed) on fake GPUs are
    test_rehearsal's."""
    import tempfile

    import ray

    from aac.learner.allocator import jemalloc_loaded, learner_env
    from aac.placement import Placed, start_ray

    class Piece:  # defined here: Ray ships it by value
        def report(self):
            import torch

            return os.environ.get("CUDA_VISIBLE_DEVICES"), os.environ["OMP_NUM_THREADS"], torch.get_num_threads()

    cfg = compose("+recipe=qwen3_8b", "learner.allocator=jemalloc")
    assert cfg.rollout.num_gpus == 1 and cfg.learner.num_gpus == 1
    monkeypatch.setenv("RAY_TMPDIR", tempfile.mkdtemp(prefix="ray", dir="/tmp"))  # unix socket paths < 108 B
    ray.shutdown()
    start_ray(num_cpus=2, num_gpus=2, threads=3)
    try:
        engine = Placed(Piece, use_ray=True, name="engine", num_gpus=cfg.rollout.num_gpus)
        learner = Placed(Piece, use_ray=True, name="learner", num_gpus=cfg.learner.num_gpus, env=learner_env(cfg.learner))
        (on_engine, *_), (on_learner, omp, threads) = engine.report(), learner.report()
        assert on_engine and on_learner and on_engine != on_learner, (on_engine, on_learner)
        # rollout.cpu_threads reaches every actor (Ray alone gives a num_cpus=0 actor 1 thread); torch
        # takes at most one thread per core
        assert (omp, threads) == ("3", min(3, len(os.sched_getaffinity(0))))
        # learner_env's preload reaches the actor's process as aac.train starts it
        assert ray.get(learner.actor.__ray_call__.remote(lambda self: jemalloc_loaded()))
        assert not ray.get(engine.actor.__ray_call__.remote(lambda self: jemalloc_loaded()))
        cpu = compose("+recipe=tiny")
        assert cpu.rollout.num_gpus == 0 and cpu.learner.num_gpus == 0  # CPU recipes ask for none
    finally:
        ray.shutdown()


def test_an_engine_with_lora_slots_serves_the_base_model_but_not_the_reverse():
    # aac.eval.side_by_side plays the base arm, then the tuned one, on one EngineSet: the base arm's engine has
    # no LoRA slots, so the tuned arm gets its own; a LoRA engine built first also serves base requests
    from aac.placement import EngineSet

    cfg = compose("+recipe=tiny")
    engines = EngineSet(cfg.model, cfg.rollout, 0, use_ray=False)
    try:
        base = engines.get("hf", cfg.model.name)
        tuned = engines.actor(kind="hf", lora_rank=8)
        assert tuned is not base and not base.enable_lora and tuned.enable_lora
        assert engines.get("hf", cfg.model.name) is base  # the base key's own engine first
    finally:
        engines.close()
    engines = EngineSet(cfg.model, cfg.rollout, 0, use_ray=False)
    try:
        tuned = engines.actor(kind="hf", lora_rank=8)
        assert engines.get("hf", cfg.model.name) is tuned  # the training run's actor and critic: one engine
    finally:
        engines.close()


def test_evaluate_refuses_pieces_built_for_another_model(tmp_path):
    from aac.assembly import build_run
    from aac.eval.harness import EvalError, evaluate

    pieces = build_run(compose("model=tiny_qwen3", config_name="eval_config"), train=False)
    try:
        with pytest.raises(EvalError, match="another model"):
            evaluate(compose("model=smollm2_135m", f"out_dir={tmp_path}", config_name="eval_config"), overrides=[],
                     run=pieces)
    finally:
        pieces.close()
