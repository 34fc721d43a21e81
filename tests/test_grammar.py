"""Constrained formats (`env.constrained_format`): every string a phase's grammar admits parses under
the protocol's own parsers, and the random tiny model decoding under them makes no format error."""

from __future__ import annotations

import itertools
import random

import pytest
from doubles import GenerateOnly

from aac.engines.base import GenRequest, Sampling
from aac.engines.constrained import SlotMatcher, grammar_regex
from aac.env.grammar import LITERALS, header_arity, turn_grammar
from aac.env.prompts import extract_input, parse_reflection, strip_think
from aac.env.protocol import Phase
from aac.sandbox.values import parse_input


def _strings(grammar, n: int, seed: int = 0) -> list[str]:
    """All strings of the grammar when there are at most n, else n random ones plus the extremes."""
    size = 1
    for slot in grammar:
        size *= len(slot)
    if size <= n:
        return ["".join(p) for p in itertools.product(*grammar)]
    rng = random.Random(seed)
    picks = ["".join(rng.choice(slot) for slot in grammar) for _ in range(n)]
    return picks + ["".join(slot[0] for slot in grammar), "".join(slot[-1] for slot in grammar)]


def _parses(phase: Phase, arity: int, text: str) -> bool:
    if phase is Phase.REASONING:
        return bool(strip_think(text))
    if phase is Phase.INPUT:
        literal = extract_input(text)
        return literal is not None and len(parse_input(literal)) == arity
    return parse_reflection(text).ok


@pytest.mark.parametrize("phase", list(Phase))
@pytest.mark.parametrize("arity", [1, 2, 3])
def test_every_admitted_string_parses(phase, arity):
    grammar = turn_grammar(phase, arity)
    texts = _strings(grammar, 3000)
    assert texts and all(_parses(phase, arity, t) for t in texts), [t for t in texts if not _parses(phase, arity, t)][:3]
    if phase is Phase.REFLECT:
        decisions = {parse_reflection(t).decision for t in texts}
        assert decisions == {True, False}  # both decisions stay open to the policy


def test_grammar_after_a_prefix_and_its_regex():
    import re

    full = turn_grammar(Phase.INPUT, 2)
    rest = turn_grammar(Phase.INPUT, 2, prefix="Input: ")
    assert rest[0] == ("(",) and rest[1:] == full[1:]
    assert turn_grammar(Phase.REFLECT, 1, prefix="Decision: ")[0] == ("YES", "NO")
    for bad in ("Summary:", "Decision: YES"):  # not the start / not inside a fixed text
        with pytest.raises(ValueError, match="prefix"):
            turn_grammar(Phase.REFLECT, 1, prefix=bad)
    pattern = re.compile(grammar_regex(full))
    assert pattern.fullmatch("Input: (3, [1, 2])") and not pattern.fullmatch("Input: (3, 4, 5)")
    assert header_arity("def test_func(arg0, arg1):") == 2 and header_arity("def test_func(arg0):") == 1


def test_matcher_walks_tokens_inside_the_language():
    texts = ["", "I", "n", "put", ": (", "1", "0", ",)", "<eos>", "x", "-1"]
    m = SlotMatcher(turn_grammar(Phase.INPUT, 1), texts, eos_ids=[8])
    state = m.start
    assert 9 not in m.allowed(state) and 8 not in m.allowed(state)  # "x": never; EOS: not yet
    for tok in (1, 2, 3, 4, 5):  # "Input: (1"
        assert tok in m.allowed(state)
        state = m.advance(state, tok)
    assert 6 in m.allowed(state) and 7 in m.allowed(state) and 8 not in m.allowed(state)  # "10" or "1,)"
    state = m.advance(state, 7)
    assert m.allowed(state) == [8] and m.accepts(state)


@pytest.mark.slow
def test_tiny_model_under_the_grammar_makes_no_format_error(tiny_model_path):
    from aac.engines import make_engine

    engine = make_engine("hf", tiny_model_path, max_model_len=512, seed=0)
    try:
        prompt = [{"role": "user", "content": "Header: def test_func(arg0, arg1):"}]
        for phase in Phase:
            for arity in (1, 2):
                grammar = turn_grammar(phase, arity)
                reqs = [GenRequest(prompt, Sampling(temperature=1.0, max_tokens=48, seed=s, logprobs=True,
                                                    grammar=grammar)) for s in range(16)]
                free = [GenRequest(prompt, Sampling(temperature=1.0, max_tokens=48, seed=0))]
                outs = engine.generate(reqs + free)  # one batch: constrained rows beside a free one
                assert all(_parses(phase, arity, o.text) for o in outs[:-1]), [o.text for o in outs[:-1]]
                assert all(o.finish_reason == "stop" and len(o.logprobs) == len(o.token_ids) for o in outs[:-1])
                assert not _parses(Phase.INPUT, 1, outs[-1].text)  # unconstrained, it never parses
                if phase is Phase.INPUT and arity == 1:  # a narrower alphabet (env.input_literals) holds too
                    narrow = [GenRequest(prompt, Sampling(temperature=1.0, max_tokens=48, seed=s,
                                                          grammar=turn_grammar(phase, 1, literals=("7", "-1"))))
                              for s in range(8)]
                    assert {o.text for o in engine.generate(narrow)} <= {"Input: (7,)", "Input: (-1,)"}
                if phase is Phase.INPUT:
                    assert {o.text for o in outs[:-1]} <= {f"Input: ({a}{', ' if arity == 2 else ',)'}{b}{')' if arity == 2 else ''}"
                                                          for a in LITERALS for b in (LITERALS if arity == 2 else [""])}
    finally:
        engine.close()


def test_constrained_format_config_errors_name_what_it_needs():
    from aac.config import ConfigError, compose

    with pytest.raises(ConfigError, match="needs rollout.engine=hf"):
        compose("+recipe=tiny", "env.constrained_format=true", "rollout.engine=vllm")
    with pytest.raises(ConfigError, match="needs env.prompt_style=paper"):
        compose("+recipe=tiny", "env.constrained_format=true", "env.prompt_style=compact")


def test_the_grammar_starts_after_an_answer_cue():
    from aac.env.instance import Instance
    from aac.env.protocol import Episode, ProtocolConfig

    inst = Instance(uid="g/1", source="unit", code="def test_func(arg0):\n    return arg0\n", description="Identity.",
                    header="def test_func(arg0):", train_examples=[("(1,)", 1)], test_examples=[("(2,)", 2)],
                    all_examples=[("(1,)", 1, None)])
    ep = Episode(inst, ProtocolConfig(answer_cues=True), None)
    ep.step("a plan")  # reasoning -> input, whose prompt ends in the cue
    assert ep.prefill == "Input: ("
    assert turn_grammar(ep.phase, 1, prefix=ep.prefill) == turn_grammar(ep.phase, 1)[1:]


def test_input_literals_set_the_constrained_inputs_alphabet():
    from aac.config import check_literals, compose
    from aac.engines import GenResult
    from aac.env.instance import Instance
    from aac.env.protocol import ProtocolConfig
    from aac.rollout.driver import EpisodeDriver, EpisodeSpec, SamplingSpec
    from aac.sandbox.result import CallResult

    class Recording(GenerateOnly):  # the grammars the driver asks for; replies stay inside them
        def __init__(self):
            self.grammars = []

        def generate(self, requests):
            self.grammars += [r.sampling.grammar for r in requests]
            return [GenResult("".join(slot[0] for slot in r.sampling.grammar), [], [1], None, "stop", None, None)
                    for r in requests]

    def caller(source, input_str, timeout_s):
        return CallResult(output=1, error=None, duration_s=0.0, output_repr="1", normalized=1)

    inst = Instance(uid="g/2", source="unit", code="def test_func(arg0):\n    return arg0\n", description="Identity.",
                    header="def test_func(arg0):", train_examples=[("(1,)", 1)], test_examples=[], all_examples=[])
    cfg = compose("+recipe=tiny", "env.constrained_format=true", "env.input_literals=['7','-1']")
    protocol = ProtocolConfig.from_env(cfg.env)
    assert protocol.input_literals == ("7", "-1")
    engine = Recording()
    EpisodeDriver(engine, protocol, caller, SamplingSpec(1.0, 1.0, 8), seed=0).play([EpisodeSpec(0, inst)])
    inputs = [g for g in engine.grammars if g[0] == ("Input: (",)]
    assert inputs and all(g[1] == ("7", "-1") for g in inputs)
    assert turn_grammar(Phase.INPUT, 1)[1] == LITERALS  # unset: the default alphabet
    for bad in ([], ["7", "7"], ["x +"]):
        with pytest.raises(ValueError, match="env.input_literals"):
            check_literals(bad)
