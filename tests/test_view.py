"""The episode log and its viewer on one tiny run (shared by the module): training keeps a sample of each
step's episodes (a resumed run rewrites the steps after its checkpoint), wandb gets them as a Table, an
eval's report shows two as text, and `python -m aac.view` draws a run, an eval, or two evals side by side
as one self-contained page, checked in headless Chromium (its DOM after the script ran, filters set
from the URL)."""

from __future__ import annotations

import copy
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import test_train

from aac import episode_files
from aac.config import ConfigError, compose
from aac.training import Trainer
from aac.training.episode_log import EpisodeLog, sample
from aac.view import render, write_page
from aac.view.load import ViewError, load

STEPS = 2
LEARNABLE = test_train.LEARNABLE  # a reward of turn lengths: a group's episodes differ, so do advantages


class KeepingTrainer(Trainer):
    """Keeps each step's batch and advantages (the episode log's input) for the unit checks."""

    def advantages(self, batch):
        adv = super().advantages(batch)
        self.kept = getattr(self, "kept", []) + [(batch, adv)]
        return adv


def _cfg(out: Path, *extra: str):
    return compose("+recipe=tiny", "rollout.placement=local", f"out_dir={out}", f"max_steps={STEPS}",
                   "logging.episodes_per_step=3", *LEARNABLE, *extra)


def _train(cfg, out: Path) -> KeepingTrainer:
    trainer = KeepingTrainer(cfg, out)
    try:
        trainer.run()
    finally:
        trainer.close()
    return trainer


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A 2-step tiny run (3 episodes kept a step), its config where aac.train saves it, and a 2-function
    eval of its base model and of its tuned adapter (aac.eval.side_by_side)."""
    from aac.eval.side_by_side import side_by_side

    out = tmp_path_factory.mktemp("view") / "run"
    cfg = _cfg(out)
    trainer = _train(cfg, out)  # its config saved where aac.train saves it (config.yaml): the evals play its protocol
    side_by_side(out, ["limit=2"])
    return out, trainer


def _records(out: Path) -> list[dict]:
    return episode_files.read_steps(out / episode_files.DIR)


def test_each_step_keeps_its_sample_with_every_turn_scored_and_credited(run):
    out, trainer = run
    assert sorted(p.name for p in (out / "episodes").iterdir()) == ["step_000001.jsonl.gz", "step_000002.jsonl.gz"]
    recs = _records(out)
    assert [r["step"] for r in recs] == [1, 1, 1, 2, 2, 2]
    batches = trainer.kept
    for r in recs:
        batch, adv = batches[r["step"] - 1]
        ep = next(e for e in batch.episodes if e.key == r["key"])
        assert r["uid"] == ep.uid and r["return"] == pytest.approx(sum(t["reward"] for t in r["turns"]))
        assert [t["advantage"] for t in r["turns"]] == adv[batch.episodes.index(ep)]
        assert [t["reward"] for t in r["turns"]] == [t.reward for t in ep.turns]
        assert [t["adapter_version"] for t in r["turns"]] == [r["step"] - 1] * len(ep.turns)
        assert r["format_errors"] == sum(not t["parse_ok"] for t in r["turns"])
        inst = next(i for i in trainer.instances if i.uid == r["uid"])
        assert r["privileged"] == {"description": inst.description, "code": inst.code}
        for t, st in zip(r["turns"], ep.turns):
            assert t["prompt_tokens"] == len(st.prompt_ids) and re.fullmatch(r"[0-9a-f]{16}", t["prompt_hash"])
            # the replayed prompt is the one the actor saw: its header names the function's
            assert t["prompt"][-1]["role"] in ("user", "assistant") and inst.header.split("(")[0] in t["prompt"][1]["content"]
            assert {"response", "parsed", "call", "judged", "score", "reason"} <= t.keys()
    # equal hashes, equal prompts (a turn that saw nothing new repeats its cycle's prompt)
    turns = [t for r in recs for t in r["turns"]]
    assert len({t["prompt_hash"] for t in turns}) == len({json.dumps(t["prompt"]) for t in turns}) > 1
    assert any(t["advantage"] for t in turns)  # the length reward tells a group's episodes apart


def test_episodes_per_step_sets_how_many_are_kept(run, tmp_path):
    _, trainer = run
    batch, adv = trainer.kept[0]
    n = len(batch.episodes)
    assert n == 8 and sample(n, 3, 5) == sample(n, 3, 5) and sample(n, 3, 5) != sample(n, 3, 6)
    for keep, expect in ((0, 0), (2, 2), (-1, n), (100, n)):
        log = EpisodeLog(tmp_path / str(keep), keep=keep, table_every=0, seed=0, protocol=trainer.episode_log.protocol,
                         instances=trainer.instances, stop_threshold=0.7)
        assert len(log.write(1, batch, adv)) == expect
        assert (tmp_path / str(keep) / "episodes").exists() == (expect > 0)
    with pytest.raises(ConfigError, match="episodes_per_step=-2 must be >= -1"):
        compose("+recipe=tiny", "logging.episodes_per_step=-2")
    with pytest.raises(ConfigError, match="table_every=-1 must be >= 0"):
        compose("+recipe=tiny", "logging.table_every=-1")


def test_a_resumed_run_rewrites_the_steps_after_its_checkpoint(run, tmp_path, monkeypatch):
    """A run killed after step 2's episodes were written but before its checkpoint: the resume plays step
    2 again and its file holds that play, once; with wandb on (offline), step 2's episodes go to a Table."""
    monkeypatch.setenv("WANDB_SILENT", "true")
    out, _ = run
    killed = tmp_path / "killed"
    shutil.copytree(out, killed, ignore=shutil.ignore_patterns("eval", "step_000002"))
    (killed / "checkpoints" / "latest").write_text("step_000001")
    stale = [{"step": 2, "uid": "stale"}] * 5
    episode_files.write_step(killed / "episodes", 2, stale)
    episode_files.write_step(killed / "episodes", 3, stale)  # a step the resumed run never reaches
    _train(_cfg(killed, "resume=true", "logging.wandb_mode=offline", "logging.table_every=2"), killed)
    recs = _records(killed)
    assert [r["step"] for r in recs] == [1, 1, 1, 2, 2, 2] and "stale" not in {r["uid"] for r in recs}
    assert recs[:3] == _records(out)[:3]  # step 1 untouched
    (table,) = killed.glob("wandb/offline-run-*/files/media/table/episodes_*.table.json")
    assert [row[:2] for row in json.loads(table.read_text())["data"]] == [[2, r["uid"]] for r in recs[3:]]


def test_wandb_gets_a_table_of_the_kept_episodes(run, tmp_path, monkeypatch):
    import wandb

    _, trainer = run
    monkeypatch.setenv("WANDB_SILENT", "true")
    log = trainer.episode_log
    log.table_every = 2
    wb = wandb.init(project="aac-test", mode="offline", dir=str(tmp_path))
    try:
        assert not log.table(wb, 1)  # not due
        assert log.table(wb, 2)
    finally:
        wb.finish()
    (table,) = tmp_path.glob("wandb/offline-run-*/files/media/table/episodes_*.table.json")  # one: step 1 was not due
    data = json.loads(table.read_text())
    assert data["columns"][:3] == ["step", "uid", "return"] and len(data["data"]) == 3
    assert data["data"][0][1] == log.last[0]["uid"] and "reasoning" in data["data"][0][-1]


def test_an_eval_writes_its_page_and_two_sample_episodes_in_report_md(run):
    out, _ = run
    for arm in ("base", "tuned"):
        md = (out / "eval" / arm / "report.md").read_text()
        assert md.count("\n### ") == 2 and "## Sample episodes" in md and "[0] reasoning" in md
        page = (out / "eval" / arm / "episodes.html").read_text()
        data = _page_data(page)
        assert [e["uid"] for e in data["sides"][0]["episodes"]] == [
            json.loads(line)["uid"] for line in (out / "eval" / arm / "episodes.jsonl").read_text().splitlines()]
        assert set(data["functions"]) == {e["uid"] for e in data["sides"][0]["episodes"]}  # the gold side, from run.json
        # query efficiency where the row has mutants (HumanEval/3 keeps 5, HumanEval/0 none), in the page and report
        qe = {e["uid"]: e["qe"] for e in data["sides"][0]["episodes"]}
        assert qe["HumanEval/0"] is None and qe["HumanEval/3"]["mutants"] == 5
        assert len(qe["HumanEval/3"]["oracle_killed"]) >= 1 and qe["HumanEval/3"]["oracle_killed"][-1] == 1.0
        assert "| queries to kill 90% of the mutants (oracle) |" in md


def _page_data(html: str) -> dict:
    blob = re.search(r'<script type="application/json" id="data">(.*?)</script>', html, re.S).group(1)
    return json.loads(blob.replace("<\\/", "</"))


def test_the_page_is_self_contained_and_names_what_it_cannot_draw(run, tmp_path):
    out, _ = run
    html = render([load(out)])
    assert not re.search(r'(src|href)=["\']?(https?:)?//', html) and "<link" not in html  # nothing fetched
    # the four curves, drawn before the page's data and script (whose text draws an eval episode's sparkline)
    assert html.split("<script")[0].count("<svg") == 4 and "return (mean per episode)" in html
    with pytest.raises(ViewError, match="neither a training run"):
        load(tmp_path)
    res = subprocess.run([sys.executable, "-m", "aac.view", f"dirs={tmp_path}"], capture_output=True, text=True)
    assert res.returncode == 1 and res.stderr.strip().startswith("aac: cannot view:") and len(res.stderr.splitlines()) == 1
    with pytest.raises(ViewError):  # a mistyped dir: its error, and no folder made for the page
        write_page([tmp_path / "typo"], tmp_path / "typo" / "episodes.html")
    assert not (tmp_path / "typo").exists()


def _hundred(out: Path, tmp_path: Path) -> Path:
    """A run dir of 100 kept episodes (the tiny run's, copied over 25 steps; every third concluded, so
    a filter has something to hide)."""
    recs = _records(out)
    big = tmp_path / "hundred"
    for step in range(1, 26):
        batch = []
        for k in range(4):
            r = copy.deepcopy(recs[(step * 4 + k) % len(recs)])
            r["step"], r["concluded"] = step, (step * 4 + k) % 3 == 0
            batch.append(r)
        episode_files.write_step(big / "episodes", step, batch)
    shutil.copy(out / "metrics.jsonl", big / "metrics.jsonl")
    return big


def test_a_page_of_100_episodes_stays_under_2_mb(run, tmp_path):
    out, _ = run
    page = write_page([_hundred(out, tmp_path)], tmp_path / "p.html")
    size = page.stat().st_size
    print(f"100 episodes: {size} bytes")
    assert len(_page_data(page.read_text())["sides"][0]["episodes"]) == 100 and size < 2_000_000


def _chromium() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        pytest.skip("no chromium on PATH (`make test` installs Debian's package)")
    return path


def _dom(chromium: str, page: Path, hash_: str = "") -> str:
    res = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom",
                          f"file://{page}{hash_}"], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr[-2000:]
    return res.stdout.split('<script type="application/json"')[0]  # the drawn DOM, not the data or the script


def _rows(dom: str) -> list[tuple[str, bool]]:
    """(data-id, hidden) of each index row."""
    return [(m.group(2), "hidden" in m.group(3))
            for m in re.finditer(r'<tr class="ep( sel)?"[^>]*?data-id="([^"]+)"([^>]*)>', dom)]


def test_chromium_draws_episodes_scores_and_filters(run, tmp_path):
    chromium = _chromium()
    out, _ = run
    big = _hundred(out, tmp_path)
    page = write_page([big], tmp_path / "run.html")
    recs = _records(big)
    dom = _dom(chromium, page)
    rows = _rows(dom)
    assert len(rows) == 100 and not any(h for _, h in rows) and "100 of 100 episodes shown" in dom
    # the first episode, as cycles of three turns with score, reward and the advantage's bar
    first = recs[0]
    assert dom.count('class="cycle"') == -(-len(first["turns"]) // 3)
    assert dom.count('<span class="reward">reward ') == len(first["turns"]) and dom.count('class="bar"') == len(first["turns"])
    assert f'reward {first["turns"][1]["reward"]:.2f}' in dom
    assert "Privileged: what the critic sees" in dom and first["privileged"]["description"].split("'")[0][:30] in dom
    # a filter set from the URL hides what it should
    dom = _dom(chromium, page, "#concluded=yes")
    shown = {i for i, hidden in _rows(dom) if not hidden}
    concluded = sum(r["concluded"] for r in recs)
    assert 0 < len(shown) == concluded < 100 and f"{concluded} of 100 episodes shown" in dom
    assert shown == {f"s{r['step']}-{n}" for n, r in enumerate(recs) if r["concluded"]}
    dom = _dom(chromium, page, "#concluded=yes&phase=input")
    assert 'data-phase="reasoning"' in dom and re.search(r'data-phase="reasoning"[^>]*hidden', dom)
    assert not re.search(r'data-phase="input"[^>]*hidden', dom)
    # an eval's page, and the two evals side by side (one function under both, its gold once)
    eval_page = write_page([out / "eval" / "base", out / "eval" / "tuned"], tmp_path / "cmp.html")
    dom = _dom(chromium, eval_page)
    assert len(_rows(dom)) == 2 and dom.count('<div class="col">') == 2 and dom.count('id="privileged"') == 1
    assert "judge score" in dom and "2 of 2 functions shown" in dom
    dom = _dom(chromium, eval_page, "#ep=HumanEval/3")  # a row with mutants: its query efficiency, per side
    assert dom.count('<div class="qe"') == 2 and "mutants killed: " in dom
