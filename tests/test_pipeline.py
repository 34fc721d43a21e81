"""The one-step off-policy pipeline and the critic overlapping the rollout: lockstep stays exactly as it
was, the lag is one version and logged, resume stays exact with a rollout collected ahead, and
judging episodes as they end changes when the critic works, not what it pays."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from safetensors.torch import load_file

from aac.config import ConfigError, compose
from aac.metrics import read
from aac.training import Trainer

GOLDEN = Path(__file__).parent / "data" / "tiny_lockstep_metrics.json"
RUN = ("+recipe=tiny", "rollout.placement=local", "save_every=100", "env.max_steps=6", "rollout.group_size=2",
       "learner.lr=5e-2")


def _train(out: Path, *overrides: str) -> list[dict]:
    trainer = Trainer(compose(*RUN, *overrides), out)
    try:
        trainer.run()
    finally:
        trainer.close()
    return read(out / "metrics.jsonl")


def test_max_off_policy_steps_0_gives_the_lockstep_metrics_exactly(tmp_path):
    """The metrics of 3 tiny steps as the loop wrote them before the pipeline existed
    (tests/data/tiny_lockstep_metrics.json), timings and latencies aside; its skipped updates' `update/tokens`
    are the prefix tree's count since a skipped update reports what its micro-batches would run. Re-pinned once
    since, with no change to the loop: the HF engine's per-row sampler (7fe2ee9) draws other tokens."""
    golden = json.loads(GOLDEN.read_text())
    rows = _train(tmp_path, "max_steps=3", "rollout.max_off_policy_steps=0")
    assert len(rows) == len(golden["rows"])
    for row, want in zip(rows, golden["rows"]):
        assert {k: row[k] for k in want} == want
        assert row["offpolicy/lag"] == 0


# every turn is scored by its length alone: the random tiny model's updates then move its policy
LEARNABLE = ("rewards=no_informativeness", "rewards.lambda_h=0", "rewards.p_parse=0", "rewards.tau_reason=6",
             "rewards.tau_input=6", "rewards.tau_reflect=6")


def test_one_step_off_policy_trains_on_the_previous_version_and_resumes_exactly(tmp_path):
    off = ("max_steps=4", "rollout.max_off_policy_steps=1", *LEARNABLE)
    rows = _train(tmp_path / "full", *off, "save_every=2")
    assert [r["offpolicy/lag"] for r in rows] == [0, 1, 1, 1]  # step 1 played before any update
    lockstep = _train(tmp_path / "lockstep", "max_steps=4", *LEARNABLE)
    assert [r["uids"] for r in rows] == [r["uids"] for r in lockstep]  # the same data order
    assert rows[0]["reward/episode_total_mean"] == lockstep[0]["reward/episode_total_mean"]
    # the lag shows where the importance weight reads it: the engine's log-probs are a version behind
    for row, same in zip(rows[1:], lockstep[1:]):
        assert row["offpolicy/lag1/logprob_gap"] > 100 * max(same["offpolicy/lag0/logprob_gap"], 1e-7)
    # the checkpoint of step 2 holds step 3's rollout, collected ahead: a run resumed from it trains on it
    step2 = tmp_path / "full" / "checkpoints" / "step_000002"
    assert (step2 / "rollout_ahead.pt").exists()
    resumed = _train(tmp_path / "resumed", *off, f"resume={step2}")
    keys = ("reward/episode_total_mean", "update/loss", "offpolicy/lag", "uids")
    assert [{k: r[k] for k in keys} for r in resumed] == [{k: r[k] for k in keys} for r in rows[2:]]

    def adapter(out):
        return load_file(str(out / "checkpoints" / "step_000004" / "adapter" / "adapter_model.safetensors"))

    full, again = adapter(tmp_path / "full"), adapter(tmp_path / "resumed")
    assert all((full[k] == again[k]).all() for k in full)


def test_the_sync_overlaps_the_next_rollout_and_the_step_line_gives_the_rollouts_own_time(tmp_path, caplog):
    """Under the pipeline each version's weights check runs while the next step's rollout plays (its metrics in
    that step's row; the last step checks its own at once: no rollout follows); the step's line reports the
    rollout's own seconds and rate, `ahead` when it played during the previous update (the step itself waited
    ~0 s for it: issue 48 saw `rollout 0.0s (75382803 tok/s)`)."""
    with caplog.at_level("INFO", logger="aac.train"):
        rows = _train(tmp_path, "max_steps=4", "rollout.max_off_policy_steps=1", "sync_check_every=1", *LEARNABLE)
    assert [r.get("sync/checked_version") for r in rows] == [None, 1, 2, 4]
    assert all(r["sync/logprob_gap"] < 0.05 for r in rows[1:])
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("step ")]
    assert len(lines) == len(rows) == 4
    for row, line in zip(rows, lines):
        ahead = row["step"] > 1
        assert row["rollout/ahead"] == ahead and row["offpolicy/lag"] == ahead
        played = row["time/played_s"]
        assert row["rollout/tokens_per_s"] == pytest.approx(row["rollout/generated_tokens"] / played)
        assert f"rollout {played:.1f}s{' ahead' if ahead else ''} ({row['rollout/tokens_per_s']:.0f} tok/s)" in line
        if ahead:  # what the step waited for it, not its length
            assert row["time/rollout_s"] < 0.1 * played


def test_max_off_policy_steps_is_0_or_1():
    with pytest.raises(ConfigError, match="max_off_policy_steps=2"):
        compose("+recipe=tiny", "rollout.max_off_policy_steps=2")


def test_the_critic_judges_episodes_as_they_end_and_pays_the_same(tmp_path):
    scripted = ("max_steps=1", "critic.kind=scripted", "critic.informativeness=coverage")
    after, overlapped = (_train(tmp_path / name, *scripted, f"rollout.critic_overlap={on}")[0]
                         for name, on in (("after", "false"), ("overlap", "true")))
    for key in ("reward/episode_total_mean", "reward/reasoning_mean", "reward/reflect_mean", "critic/judgments"):
        assert overlapped[key] == after[key], key
    # with the LLM critic: most of its work is done while episodes still play (decoded inside the formats,
    # the random actor says YES at random, so episodes end at different turns)
    llm = _train(tmp_path / "llm", "max_steps=1", "rollout.group_size=4", "rollout.critic_overlap=true",
                 "env.constrained_format=true", "env.max_steps=15")[0]
    assert llm["episode/turns_mean"] < 15
    # the wait once play ended is shorter than the critic's calls in all (without overlap it is all of them)
    assert llm["time/critic_busy_s"] > 0 and llm["time/critic_s"] < 0.98 * llm["time/critic_busy_s"], llm


class SlowCritic:
    """A critic double whose every batch takes `seconds` (a latency-bound engine), noting how many run at once."""

    def __init__(self, seconds: float):
        import threading

        self.seconds, self.running, self.most = seconds, 0, 0
        self._lock = threading.Lock()

    def score(self, judgments):
        import time

        with self._lock:
            self.running += 1
            self.most = max(self.most, self.running)
        time.sleep(self.seconds)
        with self._lock:
            self.running -= 1
        return [0.5] * len(judgments)


def test_overlapped_judgment_batches_run_at_once_and_busy_is_wall_time():
    # each collect's finished episodes are a batch: with one critic thread three batches took three latencies
    import time

    from aac.config import RewardConfig
    from aac.rollout.workers import _Judging

    critic = SlowCritic(0.4)
    judge = _Judging(critic, RewardConfig(), overlap=True, episodes=4)
    t0 = time.perf_counter()
    batches = [judge._pool.submit(judge._score, [object()] * n) for n in (1, 2, 3)]
    assert [len(b.result()) for b in batches] == [1, 2, 3]
    wall = time.perf_counter() - t0
    assert critic.most == 3 and wall < 2 * 0.4, wall
    assert 0.4 <= judge.busy_s <= wall + 0.01  # the time a batch ran, not the sum of the three (1.2 s)
