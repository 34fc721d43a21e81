"""`python -m aac.export checkpoint=CKPT out=DIR [merge=true] [base=HUB_ID]`: take a tuned actor elsewhere.

`checkpoint=` is what `aac.eval` accepts (a step folder `runs/x/checkpoints/step_N`, its `adapter/`, or
a run's out_dir: its newest intact checkpoint). DIR gets the peft adapter (`PeftModel.from_pretrained(base,
DIR)`, `vllm serve BASE --enable-lora --lora-modules NAME=DIR`), or with `merge=true` the base model
with the adapter merged into its weights (peft's `merge_and_unload`) and the base's tokenizer (a plain
`from_pretrained` folder, `vllm serve DIR`). Beside it, `README.md`: a model card naming the base model,
recipe, steps, data, the run's eval numbers, and the protocol and prompts it was trained under (an
adapter is only as good as the prompts it is played with); and `aac_config.yaml`, the run's composed
config. `base=`: the base model id written into the adapter's config (an embedded model is a local
cache path, which does not travel).
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from aac.cli import Key, parse_keys, switch
from aac.errors import UserError, entry_point
from aac.run_dir import DONE, METRICS, adapter_of, config_file, saved_run

CARD = "README.md"
RUN_CONFIG_COPY = "aac_config.yaml"
USAGE = "usage: python -m aac.export checkpoint=CKPT out=DIR [merge=true] [base=HUB_ID]"
KEYS = (Key("checkpoint", "a run dir (its newest intact checkpoint), a step folder or an adapter folder", required=True),
        Key("out", "a new or empty folder for the adapter (or merged model) and its card", required=True),
        Key("merge", "write the base model with the adapter merged into its weights", switch, False),
        Key("base", "the base model id written into the adapter's config (an embedded model's path does not travel)"))


class ExportError(UserError, ValueError):
    """An export that cannot be made (an occupied out folder); one line."""

    what = "cannot export"


@dataclass
class Provenance:
    """What the card says of an adapter: its run's config (None: a bare adapter folder) and step."""

    adapter: Path
    run_dir: Optional[Path]
    run_cfg: Any  # the run's composed config (a DictConfig), or None
    step: Optional[int]

    @classmethod
    def of(cls, adapter: Path) -> Provenance:
        from omegaconf import OmegaConf

        run = saved_run(adapter)
        run_cfg = OmegaConf.load(config_file(run)) if run is not None else None
        trainer = adapter.parent / DONE  # a training checkpoint's
        step = json.loads(trainer.read_text()).get("step") if trainer.is_file() else None
        return cls(adapter, run, run_cfg, step)

    def get(self, key: str, default: object = None) -> Any:
        from omegaconf import OmegaConf

        if self.run_cfg is None:
            return default
        value = OmegaConf.select(self.run_cfg, key, default=default, throw_on_missing=False)
        return OmegaConf.to_container(value, resolve=True) if OmegaConf.is_config(value) else value


def adapter_base(adapter: Path) -> str:
    return json.loads((adapter / "adapter_config.json").read_text())["base_model_name_or_path"]


# ---------------------------------------------------------------- the card


def eval_numbers(prov: Provenance) -> list[str]:
    """Table rows of the run's evaluations: its last held-out evaluation during training (metrics.jsonl's
    `eval/*`) and every `aac.eval` run saved inside the run folder (RUN/eval/*/report.json)."""
    from aac.eval.report import fmt

    def pct(x: Optional[float]) -> str:
        return f"{fmt(None if x is None else 100 * x, 1)} %"

    if prov.run_dir is None:
        return []
    rows = []
    metrics = prov.run_dir / METRICS
    if metrics.is_file():
        evals = [r for r in map(json.loads, metrics.read_text().splitlines()) if "eval/description_score" in r]
        if evals:
            r = evals[-1]
            rows.append(f"| held-out during training, step {r['step']} | {fmt(r['eval/description_score'])} | "
                        f"{pct(r['eval/code_match'])} | {fmt(r['eval/queries_mean'])} | "
                        f"{fmt(r['eval/concluded_pct'], 0)} % |")
    for report in sorted(prov.run_dir.glob("eval/*/report.json")):
        rep = json.loads(report.read_text())
        rows.append(f"| `aac.eval` {rep['run'].get('name', report.parent.name)} ({rep['n']} functions of "
                    f"{rep['run'].get('data')}, {rep['run'].get('split')}) | {fmt(rep['description_score']['mean'])} | "
                    f"{pct(rep['code_match']['mean'])} | {fmt(rep['queries_mean'])} | "
                    f"{fmt(rep['concluded_pct'], 0)} % |")
    return rows


def protocol_lines(prov: Provenance) -> list[str]:
    """The protocol keys an eval of this adapter takes from its run (aac/eval/run_protocol.py), with the
    training episode's bounds."""
    from aac.eval.run_protocol import PROTOCOL

    keys = [*dict.fromkeys([*PROTOCOL.values(), "env.history_window", "env.max_steps", "env.max_calls",
                            "rollout.temperature", "rollout.top_p"])]
    return [f"| `{key.format(phase='rollout')}` | `{json.dumps(prov.get(key.format(phase='rollout')))}` |"
            for key in keys]


def example_prompts(prov: Provenance) -> list[str]:
    """One cycle's prompts (reasoning, input, reflect) as the run's episodes showed them, on its first
    training function: the first context example's input is called for real in the sandbox."""
    from omegaconf import OmegaConf

    from aac.config import TrainConfig
    from aac.datasets import load_instances
    from aac.env.protocol import Episode, ProtocolConfig

    try:
        cfg = OmegaConf.merge(OmegaConf.structured(TrainConfig), prov.run_cfg)
        (inst,) = load_instances(cfg.env.data, split=cfg.env.split, limit=1, domain=str(cfg.env.domain))
    except Exception as e:  # the run's data is not on this machine: the card says so instead
        data = OmegaConf.select(prov.run_cfg, "env.data")
        return [f"(the run's data {data} could not be read here to show them: {type(e).__name__}: {e})"]
    episode = Episode(inst, ProtocolConfig.from_env(cfg.env))
    first_input = inst.train_examples[0][0]
    out = [f"On the run's first training function (`{inst.uid}`), with replies scripted here "
           f"(a plan, the first context example's input, a NO):", ""]
    for reply in ("I will call it with the first example's input.", None, "NO"):
        phase = episode.phase.value
        out += [f"**{phase}**", "", "```"]
        out += [f"[{m['role']}] {m['content']}" for m in episode.prompt()]
        out += ["```", ""]
        if reply is None:  # the input turn: continue the cue (if any) to the first example's input
            cue = episode.prefill
            reply = first_input[len(cue):] if first_input.startswith(cue) else f"({first_input})"
        episode.step(reply)
    return out


def model_card(prov: Provenance, *, merged: bool, base: str) -> str:
    name = prov.get("model.name", base)
    eval_rows = eval_numbers(prov)
    lines = ["---", f"base_model: {base}", f"library_name: {'transformers' if merged else 'peft'}",
             "tags: [aac, lora, agent, function-understanding]", "---", "",
             f"# An aac actor: {name} {'with its LoRA merged' if merged else '+ LoRA adapter'}", "",
             "Trained with aac's asymmetric actor-critic to explore a black-box function or service: plan an "
             "input, call it, reflect on the result and revise a hypothesis, and decide when to stop. It is "
             "played with the prompts below; other prompts are a protocol it was not trained on.", "",
             "## Provenance", "", "| | |", "|---|---|",
             f"| base model | `{name}` (weights: `{base}`) |"]
    if prov.run_dir is None:
        lines += [f"| run | none found above `{prov.adapter}` (a bare adapter folder): recipe, data and protocol "
                  "unknown |"]
    else:
        limit = prov.get("env.limit")
        lines += [
            f"| recipe | `{prov.get('recipe_name')}` |",
            f"| steps | {prov.step if prov.step is not None else '?'} of {prov.get('max_steps') or 'epochs'} "
            f"({prov.get('rollout.functions_per_step')} function(s) x group {prov.get('rollout.group_size')} a step) |",
            f"| data | `{prov.get('env.data')}` split `{prov.get('env.split')}`"
            f"{f', at most {limit} functions' if limit else ''}, domain `{prov.get('env.domain')}` |",
            f"| critic | `{prov.get('critic.kind')}` |",
            f"| learner | LoRA r={prov.get('learner.lora_r')} alpha={prov.get('learner.lora_alpha')}, "
            f"lr {prov.get('learner.lr')}, seed {prov.get('seed')} |",
            f"| run folder | `{prov.run_dir}` (its config: `{RUN_CONFIG_COPY}` here) |"]
    lines += ["", "## Evaluation", ""]
    if eval_rows:
        lines += ["| evaluation | judge score (1-5) | code match | queries / episode | concluded |",
                  "|---|---|---|---|---|", *eval_rows]
    else:
        lines.append("No evaluation recorded in the run folder (`python -m aac.eval checkpoint=CKPT "
                     "out_dir=RUN/eval/NAME` puts one where this card finds it).")
    if prov.run_dir is not None:
        lines += ["", "## Protocol", "", "What `aac.eval` and `aac.describe` take from the run when they play "
                  "this adapter (aac/eval/run_protocol.py):", "", "| key | value |", "|---|---|",
                  *protocol_lines(prov), "", "## Prompts", "", *example_prompts(prov)]
    adapter_load = ("model = AutoModelForCausalLM.from_pretrained(\"OUT\")" if merged else
                    f"base = AutoModelForCausalLM.from_pretrained(\"{base}\")\n"
                    "model = PeftModel.from_pretrained(base, \"OUT\")")
    serve = ("vllm serve OUT" if merged else f"vllm serve {base} --enable-lora --lora-modules aac=OUT "
             f"--max-lora-rank {max(8, prov.get('learner.lora_r', 8) or 8)}")
    lines += ["", "## Use", "", "```python", "from transformers import AutoModelForCausalLM"
              + ("" if merged else "\nfrom peft import PeftModel"), adapter_load, "```", "", "```bash", serve,
              "```", "", "On a function or service of your own: `python -m aac.describe checkpoint=CKPT "
              "target=module:PKG.func` (the checkpoint, not this folder: it reads the run's protocol)."]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- writing


def _write_adapter(adapter: Path, tmp: Path, base: Optional[str]) -> None:
    for f in adapter.iterdir():
        if f.is_file() and f.name != CARD:  # peft's placeholder card: ours replaces it
            shutil.copyfile(f, tmp / f.name)
    if base is not None:
        config = json.loads((tmp / "adapter_config.json").read_text())
        config["base_model_name_or_path"] = base
        (tmp / "adapter_config.json").write_text(json.dumps(config, indent=2))


def _write_merged(adapter: Path, tmp: Path, dtype: str) -> None:
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    base = adapter_base(adapter)
    model = AutoModelForCausalLM.from_pretrained(base, dtype=getattr(torch, dtype))
    merged = PeftModel.from_pretrained(model, str(adapter)).merge_and_unload()
    merged.save_pretrained(str(tmp))
    AutoTokenizer.from_pretrained(base).save_pretrained(str(tmp))


def export(checkpoint: str, out: str, *, merge: bool = False, base: Optional[str] = None) -> Path:
    """Write the adapter of `checkpoint` (merged into its base with `merge`) and its card to `out`."""
    from aac.models import atomic_build

    adapter = adapter_of(checkpoint)  # none, or a damaged checkpoint named: one line (CheckpointError)
    target = Path(out).expanduser()
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise ExportError(f"out={out} exists and is not an empty folder: give a new one")
    if target.exists():
        target.rmdir()  # an empty folder: atomic_build renames a complete one into its place
    prov = Provenance.of(adapter)
    dtype = str(prov.get("model.dtype", "float32"))

    def build(tmp: Path) -> None:
        if merge:
            _write_merged(adapter, tmp, dtype)
        else:
            _write_adapter(adapter, tmp, base)
        if prov.run_dir is not None:
            shutil.copyfile(config_file(prov.run_dir), tmp / RUN_CONFIG_COPY)
        weights = base or adapter_base(adapter)
        (tmp / CARD).write_text(model_card(prov, merged=merge, base=weights), encoding="utf-8")

    atomic_build(target, build, marker=CARD)
    return target


@entry_point
def main(argv: Optional[list[str]] = None) -> None:
    import logging

    args = parse_keys(argv, KEYS, USAGE, doc=__doc__.split("\n\n")[0])
    logging.basicConfig(level=logging.INFO, format="[%(asctime)s][%(name)s][%(levelname)s] - %(message)s")
    out = export(args.checkpoint, args.out, merge=args.merge, base=args.base)
    kind = "merged model" if args.merge else "peft adapter"
    print(f"aac.export: {kind} and its model card in {out} ({out / CARD})")


if __name__ == "__main__":
    main()
