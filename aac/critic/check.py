"""`python -m aac.critic.check`: the report card of a configured critic (aac/critic/card.py).

The critic is built exactly as training builds it (`aac.assembly` from the composed config), so the
overrides are the training ones:

    python -m aac.critic.check                                   # the embedded critic (SmolLM2, vllm)
    python -m aac.critic.check critic.scoring=logprob
    python -m aac.critic.check critic.backend=openai critic.openai.base_url=http://127.0.0.1:8000/v1 \\
        critic.openai.model=NAME critic.scoring=logprob out=runs/critic_card/NAME
    python -m aac.critic.check data=path/to/test.jsonl limit=50 critic.backend=hf
    python -m aac.critic.check env.domain=web                  # another domain's built-in set

Writes OUT/card.json and OUT/card.png and prints the headline; train with critic.card=OUT/card.json.
"""

from __future__ import annotations

import sys
from typing import Optional

from aac.cli import Key, count, parse_keys
from aac.errors import entry_point

KEYS = (Key("data", "dataset spec, as env.data (default: env.data, the domain's built-in set: builtin:humaneval for pau)"),
        Key("split", "the split of data", default="test"), Key("limit", "first N functions (default: all)", count),
        Key("out", "output folder (default runs/critic_card/MODEL-BACKEND-SCORING)"))
USAGE = "usage: python -m aac.critic.check [data=SPEC] [split=test] [limit=N] [out=DIR] [CONFIG_KEY=VALUE ...]"


def critic_about(cfg, data: str, split: str) -> dict:
    """What the card was measured on: the critic's settings that change its scores."""
    c = cfg.critic
    about = {"model": c.model or cfg.model.name, "backend": c.backend or cfg.rollout.engine, "scoring": c.scoring,
             "mode": c.mode, "examples": bool(c.examples), "max_tokens": c.max_tokens,
             "temperature": c.temperature, "data": data, "split": split}
    if about["backend"] == "openai":
        about.update(base_url=c.openai.base_url, served_model=c.openai.model)
    return about


@entry_point
def main(argv: Optional[list[str]] = None) -> int:
    # the other KEY=VALUEs are config overrides as in training (critic.*, model.*, rollout.*)
    args = parse_keys(argv, KEYS, USAGE, doc=__doc__, overrides=True)

    from aac.cli import compose_argv
    from aac.config import ConfigError
    from aac.critic.card import card_headline, run_card, write_card
    from aac.critic.critic import PrivilegedCritic
    from aac.datasets import load_instances
    from aac.env.instance import DatasetError
    from aac.placement import EngineSet, critic_engine

    _, cfg = compose_argv(args.overrides, "config", None)  # Hydra and validation errors: one line
    if cfg.critic.kind != "llm":
        raise ConfigError(f"critic.kind={cfg.critic.kind} is a rule with a known optimum, not an LLM: it has no report card; "
                          "check the LLM critic instead (critic.kind=llm, with rewards.late_stop_penalty=0 where the "
                          "recipe charges a late stop)")
    data = args.data or cfg.env.data
    instances = load_instances(data, split=args.split, limit=args.limit, domain=cfg.env.domain)
    if len(instances) < 2:
        raise DatasetError(f"{data} (split {args.split}): {len(instances)} instance(s); a report card needs at least 2")
    about = critic_about(cfg, data, args.split)
    out = args.out or f"runs/critic_card/{about['model']}-{about['backend']}-{about['scoring']}".replace(":", "_")
    engines = EngineSet(cfg.model, cfg.rollout, cfg.seed, use_ray=False)
    critic = PrivilegedCritic(critic_engine(engines, cfg.critic), cfg.critic, seed=cfg.seed)
    try:
        card = run_card(critic, instances, about)
    finally:
        critic.close()
        engines.close()
    json_path, png_path = write_card(card, out)
    print(card_headline(json_path))
    print(f"wrote {json_path} and {png_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
