"""The critic's report card: can this critic tell a right description from a wrong one?

On a split, every instance's gold description is graded as a hypothesis (with the two context
examples, as its domain shows them, as the calls seen) next to two wrong ones: another instance's
gold description (mismatched) and a near-miss of its own (`degrade`: a condition negated or a
sentence dropped).
The card holds the AUC of gold vs mismatched and of gold vs degraded (the chance that a random gold
outscores a random wrong one; 0.5 is chance), the score spread, the parse-failure and fallback rates
and the cost per judgment. Written as `card.json` + `card.png` (score distributions) by
`python -m aac.critic.check`; a training run logs `card_status(critic.card)`.
"""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path
from typing import TYPE_CHECKING, Optional

from aac.critic.degrade import degrade
from aac.critic.judgment import Judgment
from aac.critic.prompts import MAX_FIELD_CHARS

if TYPE_CHECKING:
    from aac.critic.critic import PrivilegedCritic
    from aac.env.instance import Instance

CLASSES = ("gold", "mismatched", "degraded")
CHANCE_AUC = 0.6  # below this (gold vs mismatched) the headline calls the critic at chance

STRONGER_CRITIC = (
    "point the critic at a stronger model: critic.backend=openai critic.openai.base_url=URL "
    "critic.openai.model=NAME (any OpenAI-compatible endpoint, e.g. `vllm serve`), or critic.backend=vllm "
    "critic.model=MODEL; check it first with `python -m aac.critic.check <the same critic.* overrides>` "
    "and pass critic.card=PATH/card.json")
NEVER_CHECKED = ("critic never checked: nothing says its scores carry signal (the embedded SmolLM2-135M critic "
                 "is at chance). Run `python -m aac.critic.check <the run's critic.* overrides>` and pass "
                 "critic.card=PATH/card.json; to train against a real signal, " + STRONGER_CRITIC)


def card_items(instances: list) -> list[tuple[str, Judgment, str]]:
    """(class, hypothesis judgment, how) for every instance: gold, mismatched, degraded (if any applies)."""
    from aac.env.domains import get_domain

    items = []
    n = len(instances)
    for i, inst in enumerate(instances):
        seen = get_domain(inst.domain).context(inst, MAX_FIELD_CHARS)
        graded = [("gold", inst.description, "gold")]
        # the row half the split away: a fixed derangement, never the row itself
        other = next((instances[(i + k) % n] for k in range(n // 2, n // 2 + n)
                      if instances[(i + k) % n].description != inst.description), None)
        if other is not None:
            graded.append(("mismatched", other.description, f"description of {other.uid}"))
        near = degrade(inst.description)
        if near is not None:
            graded.append(("degraded", *near))
        items += [(kind, Judgment("hypothesis", inst, text, list(seen), text), how) for kind, text, how in graded]
    return items


def auc(positives: list[float], negatives: list[float]) -> Optional[float]:
    """P(a random positive outscores a random negative), ties counting half (Mann-Whitney)."""
    if not positives or not negatives:
        return None
    wins = sum((p > q) + 0.5 * (p == q) for p in positives for q in negatives)
    return wins / (len(positives) * len(negatives))


def run_card(critic: PrivilegedCritic, instances: list[Instance], about: dict) -> dict:
    """Grade every card item with `critic` in one batch; the card as a JSON-able dict."""
    items = card_items(instances)
    first = items[0][1]  # warm-up: first-call costs and the shared prompt prefix stay out of the cost
    critic.score([Judgment("hypothesis", first.instance, "(warm-up)", first.observations, "(warm-up)")])
    engine_before = dict(critic.engine.stats.as_dict())
    health_before = critic.health
    started = time.perf_counter()
    scores = critic.score([j for _, j, _ in items])
    seconds = time.perf_counter() - started
    health = {k: v - health_before.get(k, 0) for k, v in critic.health.items() if isinstance(v, (int, float))}
    engine = {k: v - engine_before.get(k, 0) for k, v in critic.engine.stats.as_dict().items()}
    by_class = {c: [s for (k, _, _), s in zip(items, scores) if k == c and s is not None] for c in CLASSES}
    valid = [s for s in scores if s is not None]
    n = len(items)
    replies = health["replies"]
    return {
        "critic": about,
        "instances": len(instances),
        "judgments": n,
        "scored": len(valid),
        "auc_gold_vs_mismatched": auc(by_class["gold"], by_class["mismatched"]),
        "auc_gold_vs_degraded": auc(by_class["gold"], by_class["degraded"]),
        "score_spread": statistics.pstdev(valid) if valid else None,
        "classes": {c: {"n": len(v), "mean": statistics.fmean(v) if v else None,
                        "std": statistics.pstdev(v) if v else None} for c, v in by_class.items()},
        "parse_failure_rate": health["parse_failures"] / replies if replies else None,
        "fallback_rate": health["fallbacks"] / health["requests"] if health["requests"] else None,
        "digit_mass_mean": health["digit_mass"] / replies if replies and about.get("scoring") == "logprob" else None,
        "seconds_per_judgment": seconds / n,
        "prompt_tokens_per_judgment": engine["prompt_tokens"] / n,
        "generated_tokens_per_judgment": engine["generated_tokens"] / n,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "items": [{"class": k, "uid": j.instance.uid, "how": how, "text": j.text, "score": s}
                  for (k, j, how), s in zip(items, scores)],
    }


def write_card(card: dict, out_dir: str | Path) -> tuple[Path, Path]:
    """`card.json` and `card.png` (the score distribution of each class) in `out_dir`."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    json_path, png_path = out / "card.json", out / "card.png"
    json_path.write_text(json.dumps(card, indent=1))
    fig, ax = plt.subplots(figsize=(6, 3.5))
    bins = [(k - 0.5) / 9 for k in range(11)]  # one bin per generate rating k/9
    for c in CLASSES:
        values = [it["score"] for it in card["items"] if it["class"] == c and it["score"] is not None]
        ax.hist(values, bins=bins, alpha=0.5, label=f"{c} (n={len(values)})")
    ax.set_xlabel("critic score")
    ax.set_ylabel("judgments")
    ax.set_title(card_headline_of(card, short=True), fontsize=8)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(png_path, dpi=120)
    plt.close(fig)
    return json_path, png_path


def _num(value: Optional[float], fmt: str) -> str:
    return "n/a" if value is None else format(value, fmt)


def card_headline_of(card: dict, short: bool = False) -> str:
    c = card["critic"]
    who = f"{c.get('model')} ({c.get('backend')}, scoring={c.get('scoring')})"
    text = (f"AUC gold/mismatched {_num(card['auc_gold_vs_mismatched'], '.2f')}, "
            f"gold/degraded {_num(card['auc_gold_vs_degraded'], '.2f')}, "
            f"spread {_num(card['score_spread'], '.2f')}, parse failures {_num(card['parse_failure_rate'], '.0%')}, "
            f"{card['seconds_per_judgment']:.2f} s/judgment")
    if short:
        return f"{who}: {text}"
    head = f"critic card {who} on {c.get('data')}:{c.get('split')} ({card['instances']} functions): {text}"
    a = card["auc_gold_vs_mismatched"]
    if a is None or a < CHANCE_AUC:
        head += f". AT CHANCE: its rewards are noise, not a signal; {STRONGER_CRITIC}"
    return head


def card_headline(path: str | Path) -> str:
    """One line to log at training start: the card's AUCs, spread, parse failures and cost."""
    return card_headline_of(json.loads(Path(path).read_text()))


def card_status(path: Optional[str | Path]) -> str:
    """The card's headline, or the warning that the critic was never checked (no card, or none there)."""
    if path is None or not Path(path).is_file():
        return NEVER_CHECKED if path is None else f"{NEVER_CHECKED} (no card at {path})"
    return card_headline(path)
