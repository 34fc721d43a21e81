"""Every setting declares its meaning and, where numeric, its range; out-of-range values are refused in one
line naming key, value and range; docs/config.md is the reference generated from all of it."""

from __future__ import annotations

import copy
import re

import pytest
from omegaconf import OmegaConf

from aac.config import ConfigError, TrainConfig, compose, validate
from aac.config_reference import DOC, meanings, reference
from aac.settings import RULES, SettingRange, setting_fields

NUMERIC = re.compile(r"^(Optional\[)?(int|float)\]?$")


def _numeric() -> list[tuple[str, object]]:
    return [(key, f) for key, f in setting_fields(TrainConfig) if NUMERIC.match(str(f.type))]


def test_every_setting_has_a_meaning_and_every_numeric_one_a_range():
    assert not [key for key, text in meanings().items() if not text], "write a comment beside the field"
    numeric = _numeric()
    assert len(numeric) > 90  # the walk reaches the nested groups (env.sandbox, critic.openai, ...)
    assert not [key for key, f in numeric if "range" not in f.metadata], "declare it: setting(default, RANGE)"
    for r in RULES:  # a rule names real keys (the reference lists it under each)
        assert r.text and set(r.keys) <= {key for key, _ in setting_fields(TrainConfig)}, r


def _refused(cfg, key: str, bad: object) -> str:
    with pytest.raises(ConfigError) as e:
        validate(cfg)
    msg = str(e.value)
    assert len(msg.splitlines()) == 1 and msg.startswith(f"{key}={bad!r}"), msg
    return msg


def test_every_numeric_setting_refuses_a_value_out_of_its_range():
    """Each numeric key gets a value just outside its range, set as an override sets it (OmegaConf's typed
    assignment) on a composed config; one key of each kind of range goes through `compose` itself."""
    base = compose("+recipe=tiny")
    for key, f in _numeric():
        bounds: SettingRange = f.metadata["range"]
        bad = bounds.outside()
        assert not bounds.allows(bad) and bounds.allows(OmegaConf.select(base, key)), key
        cfg = copy.deepcopy(base)
        OmegaConf.update(cfg, key, bad, merge=False)
        assert bounds.text in _refused(cfg, key, bad)
    for key, bad in (("env.sandbox.workers", 0), ("env.call_timeout_s", -1.0), ("critic.coverage_output_weight", 2.0),
                     ("rewards.stop_threshold", 1.0), ("rollout.top_p", 0.0), ("learner.zero_stage", 3),
                     ("rewards.timeout_penalty", 1.0), ("max_steps", -3), ("critic.openai.timeout_s", 0.0)):
        with pytest.raises(ConfigError, match=rf"^{re.escape(key)}={bad!r} must be "):
            compose("+recipe=tiny", f"{key}={bad}")
    with pytest.raises(ConfigError, match=r"^learner.init_adapter='/no/such' does not exist \(it must be a path"):
        compose("+recipe=tiny", "learner.init_adapter=/no/such")  # a path that must exist


@pytest.mark.parametrize("text, inside, outside", [
    (">= 1", [1, 7], [0, -1]), ("> 0", [1e-9, 3.0], [0, -1]), ("<= 0", [0, -2], [1e-9]),
    ("[0, 1]", [0, 1, 0.5], [-0.1, 1.1]), ("[0, 1)", [0, 0.99], [1]), ("(0, 1]", [1, 0.1], [0]),
    ("one of 0, 1, 2", [0, 2], [3, -1, 0.5]), ("[0, 32768] (0: glibc's)", [32768, 0], [32769]),
    (">= 0 (0: never)", [0, 5], [-1]),
])
def test_range_bounds(text, inside, outside):
    r = SettingRange(text)
    assert all(r.allows(v) for v in [*inside, None]) and not any(r.allows(v) for v in outside)
    assert not r.allows(r.outside())


def test_a_range_that_does_not_parse_is_refused_where_it_is_declared():
    with pytest.raises(ValueError, match="not a range"):
        SettingRange("positive")


def test_reference_is_current():
    assert DOC.read_text() == reference(), "regenerate it: python -m aac.config_reference write=true"
