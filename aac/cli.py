"""The command line of every `python -m aac.*` command (and its `aac-*` console script): `key=value`
arguments, nothing else (docs/usage.md, "Commands", says why).

- Commands built on the config (train, eval, describe, sft, preflight, skyrl) are Hydra apps, or compose
  their config as one does (`run_hydra`, `compose_argv`): a key is a config key (`rewards.lambda_h=4`), a
  group's option (`model=NAME`, `+recipe=NAME`) or one of the command's short forms, all in `ALIASES`.
  What plain `@hydra.main` lacks is added here: a default recipe (also under `--help`, which prints the
  composed config that would run and points to docs/config.md), `model=PATH_OR_HUB_ID` as a shorthand for
  `model.name=...`, config errors as one line naming the key, and every expected error of the task as one
  line (`aac.errors.entry_point`). A resumed run (`resume=true|RUN_DIR`) takes no default recipe: its own
  config comes back from the run dir (aac/training/state.py).
- Commands that take no config (export, view, compare, side_by_side, critic.check's own keys, the data
  builders, prepare, config_reference) declare their keys (`Key`) and read them with `parse_keys`: the same
  `key=value`, a list comma-separated, a switch `key=true`; `overrides=True` passes the other `key=value`
  arguments on as config overrides (side_by_side's eval keys, critic.check's critic keys).

`--help` (`-h`) lists a command's keys. A `--flag`, a bare word or an unknown key is one line naming the
keys (`UsageError`). Standard library at import: the config, Hydra and omegaconf load when a command
composes one, so `aac.view` starts in a fraction of a second.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Optional

from aac.errors import UserError, debug, entry_point, one_line
from aac.run_dir import run_of

if TYPE_CHECKING:
    from aac.config import TrainConfig


class UsageError(UserError, ValueError):
    """An argument that is not one of the command's `key=value`s (one line naming them)."""

    what = "usage"


# ---------------------------------------------------------------- short forms of the commands built on the config

# `python -m aac.eval`: `mode=`, `data=`, `checkpoint=`, ... stand for `eval.*` keys (the schema is the training one,
# so `+recipe=NAME` and `model=` mean the same in both)
EVAL_ALIASES = {"mode": "eval.mode", "data": "eval.data", "split": "eval.split", "limit": "eval.limit",
                "checkpoint": "eval.checkpoint", "engine": "eval.engine", "judge": "eval.judge_model",
                "coder": "eval.coder_model", "gold": "eval.gold", "name": "eval.name",
                "protocol_from": "eval.protocol_from"}
ALIASES: dict[str, dict[str, str]] = {
    "aac.eval": EVAL_ALIASES,
    "aac.describe": {**{k: EVAL_ALIASES[k] for k in ("checkpoint", "limit", "engine", "judge", "protocol_from")},
                     "target": "describe.target", "max_calls": "eval.max_calls"},
    "aac.sft": {"data": "sft.data", "min_score": "sft.min_score", "epochs": "sft.epochs"},
}
LIST_KEYS = ("sft.data",)  # comma-separated lists: quoted, or Hydra would read them as a sweep


def rewrite_aliases(argv: Sequence[str], aliases: Mapping[str, str] = EVAL_ALIASES) -> list[str]:
    """`argv` with each `SHORT=VALUE` of `aliases` written as its full key (a list key's value quoted)."""
    out = []
    for arg in argv:
        key, sep, value = arg.partition("=")
        key = aliases.get(key, key) if sep else key
        if sep and key in LIST_KEYS and "," in value and value[:1] not in "'\"":
            value = f"'{value}'"
        out.append(f"{key}={value}" if sep else arg)
    return out


# ---------------------------------------------------------------- commands that take no config


@dataclass(frozen=True)
class Key:
    """One `key=value` of a command that takes no config: `parse` turns the text into the value (a ValueError
    is the one-line reason), `default` when not given."""

    name: str
    help: str
    parse: Callable[[str], object] = str
    default: object = None
    required: bool = False


def switch(text: str) -> bool:
    """`true` or `false`."""
    if text.lower() not in ("true", "false"):
        raise ValueError("expected true or false")
    return text.lower() == "true"


def items(text: str) -> list[str]:
    """A comma-separated list (`a,b`; Hydra's `[a,b]` too)."""
    return [x.strip() for x in text.strip().removeprefix("[").removesuffix("]").split(",") if x.strip()]


def count(text: str) -> int:
    """An integer >= 1."""
    if int(text) < 1:
        raise ValueError("must be >= 1")
    return int(text)


def _help(usage: str, keys: Sequence[Key], doc: str) -> str:
    width = max(len(k.name) for k in keys) + 1
    lines = [usage, "", doc.strip(), "", "keys:"] if doc else [usage, "", "keys:"]
    for k in keys:
        default = "required" if k.required else None if k.default in (None, [], "") else f"default {k.default}"
        lines.append(f"  {k.name + '=':<{width}} {k.help}" + (f" ({default})" if default else ""))
    return "\n".join(lines)


def parse_keys(argv: Optional[Sequence[str]], keys: Sequence[Key], usage: str, *, doc: str = "",
               overrides: bool = False) -> SimpleNamespace:
    """A command line of `key=value`s (`argv`, default `sys.argv[1:]`) as a namespace of `keys`' values;
    `overrides`: the arguments that are no key of `keys` come back as `.overrides` (config overrides), not
    refused. `--help` prints the keys and exits."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if any(a in ("-h", "--help") for a in argv):
        print(_help(usage, keys, doc))
        raise SystemExit(0)
    known = {k.name: k for k in keys}
    names = ", ".join(f"{k}=" for k in known)
    values = {k.name: k.default for k in keys}
    rest = []
    for arg in argv:
        key, sep, text = arg.partition("=")
        if not sep or not key or key.startswith("-"):
            raise UsageError(f"{arg!r}: every argument is KEY=VALUE (keys: {names}); {usage}")
        if key in known:
            try:
                values[key] = known[key].parse(text)
            except ValueError as e:
                raise UsageError(f"{key}={text}: {e}") from None
        elif overrides:
            rest.append(arg)
        else:
            raise UsageError(f"{key}= is not a key of this command (keys: {names}); {usage}")
    missing = [f"{k.name}=" for k in keys if k.required and values[k.name] in (None, [], "")]
    if missing:
        raise UsageError(f"missing {' and '.join(missing)}; {usage}")
    return SimpleNamespace(**values, **({"overrides": rest} if overrides else {}))


# ---------------------------------------------------------------- commands built on the config (Hydra)


def _rewrite_argv(argv: list[str], default_recipe: str | None) -> list[str]:
    from aac.config import resource_dir

    model_options = {p.stem for p in (resource_dir("conf") / "model").glob("*.yaml")}
    out = []
    for arg in argv:
        key, sep, value = arg.partition("=")
        if sep and key == "model" and value not in model_options and "," not in value:
            arg = f"model.name={value}"  # a local folder or hub id, not a registry name
        out.append(arg)
    has_recipe = any(a.lstrip("+~").startswith("recipe=") for a in out)
    resume = next((a.partition("=")[2] for a in out if a.startswith("resume=")), "false")
    resuming = resume.lower() != "false"
    if resuming and resume.lower() != "true" and not any(a.startswith("out_dir=") for a in out):
        out.append(f"out_dir={run_of(resume)}")  # resume=RUN_DIR goes on in that run dir
    # --help shows the config that would run: the default recipe's (Hydra's own --hydra-help composes none)
    if default_recipe and not has_recipe and not resuming and "--hydra-help" not in out:
        out.append(f"+recipe={default_recipe}")
    return out


def _one_line(e: BaseException) -> str:
    parts: list[str] = []
    options: list[str] = []
    while e is not None:
        lines = [ln for ln in str(e).splitlines() if ln.strip()]
        in_options = False
        for ln in lines:
            text = ln.strip()
            if text.startswith("Available options"):
                in_options = True
            elif in_options and ln.startswith("\t") and "provider=" not in text:
                options.append(text)
            elif text.startswith(("To append", "Config search path", "provider=", "object_type",
                                  "reference_type", "full_key")):
                in_options = False
            elif text not in parts and "$VALUE" not in text:
                parts.append(text)
        e = e.__cause__ or e.__context__
    msg = " ".join(p if p.endswith((".", ":")) else p + ";" for p in parts).rstrip(";")
    return msg + (f" (options: {', '.join(options)})" if options else "")


def _precheck(overrides: list[str], config_name: str) -> TrainConfig:
    """Compose once to turn Hydra/OmegaConf errors into one line naming the key; returns the config."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    from aac.config import resource_dir, validate
    from aac.settings import ConfigError, named_error

    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(str(resource_dir("conf")), version_base=None):
            cfg = compose(config_name, overrides=overrides)
        validate(cfg)
        return cfg
    except Exception as e:  # Hydra and OmegaConf errors, often nested: flatten to one line
        if debug():
            raise
        error = e if isinstance(e, ConfigError) else named_error(e) or ConfigError(_one_line(e))
        raise SystemExit(one_line(error)) from None
    finally:
        GlobalHydra.instance().clear()


_FLAGS_WITH_VALUE = {"--cfg", "-c", "--package", "-p", "--config-path", "-cp", "--config-name",
                     "-cn", "--config-dir", "-cd", "--experimental-rerun"}


def _split_flags(argv: list[str]) -> tuple[list[str], list[str]]:
    flags, overrides, i = [], [], 0
    while i < len(argv):
        arg = argv[i]
        if arg in _FLAGS_WITH_VALUE and i + 1 < len(argv):
            flags += argv[i : i + 2]
            i += 2
            continue
        (flags if arg.startswith("-") else overrides).append(arg)
        i += 1
    return flags, overrides


def compose_argv(argv: Sequence[str], config_name: str, default_recipe: str | None,
                 aliases: Optional[Mapping[str, str]] = None) -> tuple[list[str], TrainConfig]:
    """A command line's flags and its composed, validated config, for an entry point that is not a
    Hydra app (aac.skyrl, aac.critic.check); the same shorthands and one-line errors as `run_hydra`."""
    from aac.config import register_configs

    register_configs()
    flags, overrides = _split_flags(_rewrite_argv(rewrite_aliases(argv, aliases or {}), default_recipe))
    return flags, _precheck(overrides, config_name)


def run_hydra(task: Callable, config_name: str, default_recipe: str | None, argv: Optional[Sequence[str]] = None,
              aliases: Optional[Mapping[str, str]] = None) -> None:
    """Run `task` as the Hydra app of `config_name` on `argv` (default: `sys.argv[1:]`), its short forms
    (`aliases`) written out first."""
    import hydra

    from aac.config import register_configs, resource_dir

    register_configs()
    argv = _rewrite_argv(rewrite_aliases(sys.argv[1:] if argv is None else argv, aliases or {}), default_recipe)
    flags, overrides = _split_flags(argv)
    multirun = any(f in ("-m", "--multirun") for f in flags)
    if not multirun and not any(f in ("--help", "-h", "--hydra-help", "--info") for f in flags):
        _precheck(overrides, config_name)
    if any(f in ("--help", "-h") for f in flags):  # the command as typed, in --help's first line
        spec = getattr(sys.modules["__main__"], "__spec__", None)
        command = (spec.name if spec else task.__module__).removesuffix(".__main__")
        argv.append(f"hydra.help.app_name='python -m {command}'")
    sys.argv = [sys.argv[0]] + argv
    main = hydra.main(config_path=str(resource_dir("conf")), config_name=config_name,
                      version_base=None)(entry_point(task))
    main()


def command_line_overrides() -> list[str]:
    """The command line's overrides inside a Hydra app (`python -m aac.eval`), else none."""
    from hydra.core.hydra_config import HydraConfig

    return list(HydraConfig.get().overrides.task) if HydraConfig.initialized() else []


def output_dir(cfg: TrainConfig) -> Path:
    """Where a command writes: Hydra's run dir (`hydra.run.dir`, which defaults to `out_dir`) inside a
    Hydra entry, else `out_dir` (a config composed in a notebook or a test)."""
    from hydra.core.hydra_config import HydraConfig

    if HydraConfig.initialized():
        return Path(HydraConfig.get().runtime.output_dir)
    return Path(cfg.out_dir)
