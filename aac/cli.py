"""Shared front door of the Hydra entry points (`aac.train`, `aac.eval`).

It adds what plain `@hydra.main` lacks: a default recipe (also under `--help`, which prints the composed
config that would run and points to docs/config.md), `model=PATH_OR_HUB_ID` as a shorthand for
`model.name=...`, config errors reported as one line naming the key, and every expected error of the task as
one line (`aac.errors.entry_point`). A resumed run (`resume=true|RUN_DIR`) takes no default recipe: its own
config comes back from the run dir (aac/training/state.py).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from aac.config import ConfigError, named_error, register_configs, resource_dir, validate
from aac.errors import debug, entry_point, one_line
from aac.run_dir import run_of

if TYPE_CHECKING:
    from aac.config import TrainConfig


def _rewrite_argv(argv: list[str], default_recipe: str | None) -> list[str]:
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


def compose_argv(argv: list[str], config_name: str, default_recipe: str | None) -> tuple[list[str], TrainConfig]:
    """A command line's flags and its composed, validated config, for an entry point that is not a
    Hydra app (aac.skyrl); the same shorthands and one-line errors as `run_hydra`."""
    register_configs()
    flags, overrides = _split_flags(_rewrite_argv(argv, default_recipe))
    return flags, _precheck(overrides, config_name)


def run_hydra(task: Callable, config_name: str, default_recipe: str | None) -> None:
    import hydra

    register_configs()
    argv = _rewrite_argv(sys.argv[1:], default_recipe)
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


def output_dir(cfg: TrainConfig) -> Path:
    """Where a command writes: Hydra's run dir (`hydra.run.dir`, which defaults to `out_dir`) inside a
    Hydra entry, else `out_dir` (a config composed in a notebook or a test)."""
    from hydra.core.hydra_config import HydraConfig

    if HydraConfig.initialized():
        return Path(HydraConfig.get().runtime.output_dir)
    return Path(cfg.out_dir)
