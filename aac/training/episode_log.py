"""The episodes a training run keeps: a seeded sample of each step's episodes, every turn with what the
actor saw and did, what the sandbox returned, the critic's score, the reward and the turn's advantage,
in OUT/episodes/step_NNNNNN.jsonl.gz (aac/episode_files.py).

`logging.episodes_per_step` sets how many (0: none, -1: all). A resumed run drops the files after its
checkpoint's step and writes those steps again. `python -m aac.view dirs=OUT` draws them; the schema is in
docs/viewer.md. Prompts are rebuilt by replaying the episode's replies through the protocol
(`aac.env.replay.replay`), so the rollout ships no prompt text back; their hash is over the prompt's token
ids, the tokens the learner trained on.
"""

from __future__ import annotations

import hashlib
import logging
import random
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

import aac.episode_files as episode_files
from aac.env.protocol import ProtocolConfig
from aac.env.replay import ReplayError, replay

if TYPE_CHECKING:
    from aac.config import TrainConfig
    from aac.env.instance import Instance
    from aac.rollout.workers import RolloutBatch, ScoredEpisode

log = logging.getLogger("aac.train")


def prompt_hash(prompt_ids: list[int]) -> Optional[str]:
    """A short hash of a prompt's token ids (None: the engine returned none, an endpoint)."""
    return hashlib.sha256(",".join(map(str, prompt_ids)).encode()).hexdigest()[:16] if prompt_ids else None


def sample(n_episodes: int, keep: int, seed: int) -> list[int]:
    """Which episodes of a step of `n_episodes` to keep (in order): `keep` drawn with `seed`, -1: all."""
    if keep < 0 or keep >= n_episodes:
        return list(range(n_episodes))
    return sorted(random.Random(seed).sample(range(n_episodes), keep))


def episode_record(step: int, ep: ScoredEpisode, advantages: list[float], instance: Optional[Instance],
                   protocol: ProtocolConfig, stop_threshold: float) -> dict[str, Any]:
    """One kept episode: its turns (the eval record's fields, plus prompt, critic score, reward, advantage
    and adapter version of each) and the instance's privileged side (what only the critic saw)."""
    rec = ep.record
    prompts: list[Optional[list[dict]]] = [None] * len(ep.turns)
    if instance is not None:
        try:
            prompts = [t.messages for t in replay(rec, instance, protocol)]
        except ReplayError as e:  # the record is still worth keeping without its prompts
            log.debug("episode log: no prompts for %s: %s", ep.uid, e)
    turns = []
    for step_rec, turn, adv, messages in zip(rec["steps"], ep.turns, advantages, prompts):
        turns.append({
            **{k: step_rec[k] for k in ("index", "phase", "prefill", "response", "parse_ok", "parsed", "decision",
                                        "hypothesis", "call")},
            "prompt_hash": prompt_hash(turn.prompt_ids), "prompt_tokens": len(turn.prompt_ids), "prompt": messages,
            "tokens": len(turn.token_ids), "adapter_version": turn.adapter_version,
            # the critic's judgment this turn's reward reads; its reply text is not kept by the critic
            "judged": turn.judged, "score": turn.score, "reason": None,
            "reward": turn.reward, "format_penalty": turn.format_penalty, "advantage": adv,
        })
    last = ep.turns[-1] if ep.turns else None
    return {
        "schema": episode_files.SCHEMA, "step": step, "key": ep.key, "group": ep.group, "uid": ep.uid, "source": rec.get("source"),
        "concluded": ep.concluded, "timed_out": ep.timed_out,
        # as episode/premature_stop_pct counts it: YES with the final hypothesis scored <= the stop threshold
        "premature_stop": bool(ep.concluded and last is not None and last.score is not None
                               and last.score <= stop_threshold),
        "num_queries": ep.num_queries, "format_errors": rec.get("format_errors"), "return": ep.total_reward,
        "description": rec.get("description"), "turns": turns,
        "privileged": None if instance is None else {"description": instance.description, "code": instance.code},
    }


class EpisodeLog:
    """Writes the kept episodes of each step under OUT/episodes; `table` mirrors them to wandb."""

    def __init__(self, out_dir: Path, *, keep: int, table_every: int, seed: int, protocol: ProtocolConfig,
                 instances: list[Instance], stop_threshold: float):
        self.root = out_dir / episode_files.DIR
        self.keep, self.table_every, self.seed = keep, table_every, seed
        self.protocol, self.stop_threshold = protocol, stop_threshold
        self.instances = {i.uid: i for i in instances}
        self.last: list[dict] = []  # the records of the last step written

    @classmethod
    def for_run(cls, out_dir: Path, cfg: TrainConfig, instances: list[Instance], resumed_at: int) -> EpisodeLog:
        """The log of a training run: `logging.episodes_per_step` kept a step, the run's protocol and seed. A run
        (re)started at step `resumed_at` plays the steps after it again: their files go."""
        from aac.assembly import training_protocol

        run = cls(out_dir, keep=cfg.logging.episodes_per_step, table_every=cfg.logging.table_every, seed=cfg.seed,
                  protocol=training_protocol(cfg.env), instances=instances, stop_threshold=cfg.rewards.stop_threshold)
        episode_files.drop_after(run.root, resumed_at)
        return run

    def write(self, step: int, batch: RolloutBatch, advantages: list[list[float]]) -> list[dict]:
        """Keep step `step`'s sample of `batch`'s episodes (with their per-turn advantages)."""
        self.last = []
        if self.keep == 0:
            return self.last
        chosen = sample(len(batch.episodes), self.keep, self.seed * 1_000_003 + step)
        self.last = [episode_record(step, batch.episodes[i], advantages[i], self.instances.get(batch.episodes[i].uid),
                                    self.protocol, self.stop_threshold) for i in chosen]
        episode_files.write_step(self.root, step, self.last)
        return self.last

    def table(self, wandb_run: object, step: int) -> bool:
        """Log the last step's records as a wandb Table when `step` is due (`table_every`); whether it was."""
        if wandb_run is None or not self.last or not self.table_every or step % self.table_every:
            return False
        import wandb

        columns = ["step", "uid", "return", "concluded", "premature_stop", "timed_out", "format_errors", "turns",
                   "final_score", "description", "transcript"]
        rows = [[r["step"], r["uid"], r["return"], r["concluded"], r["premature_stop"], r["timed_out"],
                 r["format_errors"], len(r["turns"]), r["turns"][-1]["score"] if r["turns"] else None,
                 r["description"], episode_files.transcript(r)] for r in self.last]
        wandb_run.log({"episodes": wandb.Table(columns=columns, data=rows)}, step=step)
        return True
