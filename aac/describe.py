"""`python -m aac.describe [checkpoint=CKPT] target=...`: the actor documents functions or services of your own.

Targets: `module:PKG.func` (one function of an importable package), `module:PKG.Class` (one class, a row
of the stateful domain), `module:PKG` (its public functions and classes), `openapi:SPEC` (one service made
from an OpenAPI 3 spec), `jsonl:FILE` (PAU rows, e.g. a built `test.jsonl`, or the builder's `{code,
entry_point, description?}` records). Each is turned into PAU rows by the data builder
(`aac.data.build.rows_from_source`, the rows training reads), written to OUT/rows/ (a package of functions
and classes: OUT/pau/ and OUT/stateful/, each played on its own), and played
by `aac.eval`'s harness: the checkpoint's own model and protocol (read from its run,
aac/eval/run_protocol.py), live in the sandbox, greedy; without a checkpoint the base model. The judge
rates each description against the target's gold one (its docstring, the spec's text) where it has one.
OUT (`out_dir`) then holds one `<function>.md` per function: the description concluded, the calls made
with what came back, the hypothesis after each reflect, and the judge's score beside the gold
description; `index.md` lists them. The harness's records (episodes.jsonl, scores.jsonl, report.md) stay
beside them, so a rerun with the same out_dir resumes.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from aac.cli import ALIASES, command_line_overrides, output_dir, run_hydra
from aac.config import TrainConfig
from aac.errors import UserError

log = logging.getLogger("aac.describe")
KINDS = ("module", "openapi", "jsonl")
ROWS = "rows"  # OUT/rows/<SPLIT>.jsonl: the target's PAU rows, read by the harness as a split of that folder
SPLIT = "target"
INDEX = "index.md"


class DescribeError(UserError, ValueError):
    """A target that cannot be described (unknown kind, nothing buildable in it); one line."""

    what = "cannot describe"


# ---------------------------------------------------------------- targets -> rows


def _pau_rows(path: Path) -> Optional[list[dict]]:
    """The rows of a JSONL file already in the PAU schema, or None (the builder's records)."""
    from aac.env.instance import PAU_COLUMNS

    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return rows if rows and all(isinstance(r, dict) and set(PAU_COLUMNS) <= r.keys() for r in rows) else None


def target_rows(target: str, seed: int) -> tuple[list[dict], str]:
    """The PAU rows of `target` and their domain (a built service's rows are `web`, a class's `stateful`;
    a package of functions and classes: `pau+stateful`)."""
    from aac.data.build import rows_from_source
    from aac.env.rows import to_row

    kind, sep, spec = target.partition(":")
    if not sep or kind not in KINDS or not spec:
        raise DescribeError(f"target={target!r}: expected one of module:PKG.func, module:PKG, openapi:SPEC, jsonl:FILE")
    if kind == "jsonl":
        path = Path(spec).expanduser()
        if not path.is_file():
            raise DescribeError(f"target={target}: no such file")
        try:
            rows = _pau_rows(path)
        except (ValueError, OSError) as e:  # a line that is not JSON, bytes that are not UTF-8
            raise DescribeError(f"target={target}: {e}") from None
        if rows is not None:
            domains = {r.get("domain") or "pau" for r in rows}
            if len(domains) > 1:
                raise DescribeError(f"target={target}: rows of several domains ({', '.join(sorted(domains))})")
            return rows, domains.pop()
    try:
        instances, summary = rows_from_source(target, seed=seed)
    except (ValueError, OSError) as e:  # a source, spec or module that cannot be read (SourceError, SpecError, ...)
        raise DescribeError(f"target={target}: {e}") from None
    log.info("%s", summary.text().strip())
    if not instances:
        raise DescribeError(f"target={target}: no function or class could be built ({summary.text().strip().splitlines()[-1]})")
    rows = [to_row(inst) for inst in instances]
    return rows, "+".join(dict.fromkeys(inst.domain for inst in instances))


def row_uid(row: dict) -> str:
    """The uid the harness gives a row's episode."""
    from aac.env.instance import row_uid as uid

    return uid(row.get("task_id"), row["test_func_validated"])


def write_rows(run_dir: Path, rows: list[dict]) -> list[str]:
    """Write the target's rows where the harness reads them; the uids of rows that changed since the last describe
    into `run_dir` (a module function edited in place keeps its uid, its qualified name): their episodes and scores
    are dropped, so they play again instead of resuming an old function's."""
    from aac.eval import records

    path = run_dir / ROWS / f"{SPLIT}.jsonl"
    old = {row_uid(r): r for r in records.read_jsonl(path)} if path.exists() else {}
    changed = [row_uid(r) for r in rows if row_uid(r) in old and old[row_uid(r)] != r]
    for name in (records.EPISODES, records.SCORES) if changed else ():
        if (run_dir / name).exists():
            records.write_jsonl(run_dir / name, [r for r in records.read_jsonl(run_dir / name, repair=True)
                                                 if r["uid"] not in changed])
    if changed:
        log.info("%d function(s) changed since the last describe into %s, played again: %s", len(changed), run_dir,
                 ", ".join(changed))
    path.parent.mkdir(parents=True, exist_ok=True)
    records.write_jsonl(path, rows)
    return changed


# ---------------------------------------------------------------- one Markdown file per function


def file_name(uid: str) -> str:
    return re.sub(r"[^\w.-]+", "_", uid).strip("_.") + ".md"


def _code(text: object, limit: int = 300) -> str:
    text = str(text)
    text = text if len(text) <= limit else text[:limit] + " …"
    return "`" + text.replace("`", "'").replace("\n", " ").replace("|", "\\|") + "`"


@dataclass
class Described:
    """One function's episode, its score record (or None) and its row, as the Markdown file shows them."""

    episode: dict
    score: Optional[dict]
    row: dict

    @property
    def judge_score(self) -> Optional[float]:
        return (self.score or {}).get("judge", {}).get("score")

    def outcome(self) -> str:
        n = self.episode["num_queries"]
        if self.episode["concluded"]:
            return f"concluded after {n} call{'s' * (n != 1)}"
        return f"not concluded: stopped by its budget after {n} call{'s' * (n != 1)}"

    def markdown(self, model: str) -> str:
        ep, row = self.episode, self.row
        description = ep["description"] or "(no hypothesis formed)"
        fence = "```python" if row.get("domain") in (None, "", "pau") else "```"  # a service's header is no def
        lines = [f"# {ep['uid']}", "", fence, row["header"].strip(), "```", "",
                 f"Played by {model}, {self.outcome()}.", "", "## Description", "", *_quote(description), ""]
        if row.get("description"):
            score = self.judge_score
            rated = "not rated" if score is None else f"{score:g} / 5"
            lines += [f"Judge's score against the gold description: **{rated}**", "", "Gold description:", "",
                      *_quote(row["description"]), ""]
        else:
            lines += ["No gold description: not scored.", ""]
        observations = ep["observations"]
        given = len(observations) - ep["num_queries"]
        lines += ["## Given at the start", "", "| input | result |", "|---|---|"]
        lines += [f"| {_code(inp)} | {_result(out, err)} |" for inp, out, err in observations[:given]]
        lines += ["", "## Episode", "", "| turn | phase | what the actor wrote | what came back |", "|---|---|---|---|"]
        for step in ep["steps"]:
            lines.append(f"| {step['index']} | {step['phase']} | {_turn_text(step)} | {_came_back(step)} |")
        return "\n".join(lines) + "\n"


def _quote(text: str) -> list[str]:
    return [f"> {line}" if line else ">" for line in str(text).splitlines()]


def _result(output: object, error: Optional[str]) -> str:
    return f"raised {_code(error)}" if error else _code(output)


def _turn_text(step: dict) -> str:
    text = step.get("parsed") if step["phase"] == "input" else (step.get("prefill") or "") + step["response"]
    return _code(text if text is not None else step["response"]) if (text or step["response"]) else "(empty)"


def _came_back(step: dict) -> str:
    """The call's result (input turns) or the hypothesis after the reflect (reflect turns)."""
    if step["phase"] == "input":
        call = step.get("call")
        if call is None:
            return "no call: the input could not be read"
        return _result(call["output_repr"], call["error"])
    if step["phase"] == "reflect":
        if not step["parse_ok"]:
            return "reply not understood: hypothesis kept"
        decision = "YES, done" if step["decision"] else "NO, go on"
        return f"{decision}; hypothesis: {_code(step['hypothesis'])}"
    return ""


def write_pages(run_dir: Path, rows: list[dict], model: str) -> list[tuple[Described, Path]]:
    """One Markdown file per played function in `run_dir`; returns what each file shows."""
    from aac.eval import records

    by_uid = {row_uid(r): r for r in rows}
    scores = {s["uid"]: s for s in records.read_jsonl(run_dir / records.SCORES)} \
        if (run_dir / records.SCORES).exists() else {}
    pages = []
    for ep in records.read_jsonl(run_dir / records.EPISODES):
        if ep["uid"] not in by_uid:
            continue
        d = Described(ep, scores.get(ep["uid"]), by_uid[ep["uid"]])
        path = run_dir / file_name(ep["uid"])
        path.write_text(d.markdown(model), encoding="utf-8")
        pages.append((d, path))
    return pages


def write_index(run_dir: Path, pages: list[tuple[Described, Path]], model: str) -> None:
    """`index.md`: a line per page (a package's classes link into their domain's folder)."""
    index = [f"# Described by {model}", "", "| function | outcome | judge score (1-5) | description |", "|---|---|---|---|"]
    for d, path in pages:
        score = "–" if d.judge_score is None else f"{d.judge_score:g}"
        index.append(f"| [{d.episode['uid']}]({path.relative_to(run_dir).as_posix()}) | {d.outcome()} | {score} | "
                     f"{_code(d.episode['description'] or '(none)', 160)} |")
    (run_dir / INDEX).write_text("\n".join(index) + "\n", encoding="utf-8")


# ---------------------------------------------------------------- the command


def describe(cfg: TrainConfig, *, overrides: Optional[Sequence[str]] = None) -> list[tuple[Described, Path]]:
    """Build the target's rows, play and score them with `aac.eval`'s harness into out_dir, write the pages."""
    from omegaconf import OmegaConf

    from aac.eval.harness import evaluate

    target = cfg.describe.target
    if not target:
        raise DescribeError("target= is required: module:PKG.func, module:PKG, openapi:SPEC or jsonl:FILE")
    run_dir = output_dir(cfg)
    rows, _ = target_rows(target, cfg.seed)
    groups: dict[str, list[dict]] = {}
    for row in rows:
        groups.setdefault(row.get("domain") or "pau", []).append(row)
    given = list(command_line_overrides() if overrides is None else overrides)
    pages, model = [], ""
    for domain, group in groups.items():  # a package's functions and classes: one eval each, in a folder each
        where = run_dir if len(groups) == 1 else run_dir / domain
        write_rows(where, group)
        # the domain is the target's, whatever the checkpoint's run trained on (a run of functions on a service:
        # warned by the harness as a protocol it was not trained on)
        played = [*given, f"eval.data={where / ROWS}", f"eval.split={SPLIT}", f"env.domain={domain}",
                  "eval.mode=interactive",
                  # the judge only where there is a gold description to rate against (eval.score=false: never)
                  f"eval.score={bool(cfg.eval.score) and any(r.get('description') for r in group)}"]
        run = evaluate(OmegaConf.merge(cfg, OmegaConf.from_dotlist(played[len(given):])), overrides=played,
                       run_dir=where)["run"]
        model = f"`{run['model']}`" + (f" + `{run['checkpoint']}`" if run["checkpoint"] else "")
        pages += write_pages(where, group, model)
    write_index(run_dir, pages, model)
    return pages


def task(cfg) -> None:
    for noisy in ("httpx", "httpx2"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    pages = describe(cfg)  # an expected error is one line (run_hydra)
    for d, path in pages:
        score = "" if d.judge_score is None else f", judge {d.judge_score:g}/5"
        print(f"{d.episode['uid']}: {d.outcome()}{score} -> {path}")


def main(argv: Optional[list[str]] = None) -> None:
    run_hydra(task, "describe_config", None, argv, aliases=ALIASES["aac.describe"])


if __name__ == "__main__":
    main()
