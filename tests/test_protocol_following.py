"""Settings that help a small actor follow the protocol: prompt style, answer cues (prefill), per-phase
token budgets, and the lenient-but-exact parsing rules. No model is run (one tokenizer is loaded)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from doubles import GenerateOnly

from aac.config import ConfigError, compose
from aac.engines import GenResult
from aac.engines.base import continuation, render_chat
from aac.env.prompts import extract_input, parse_reflection
from aac.env.protocol import Episode, Phase, ProtocolConfig
from aac.rollout.driver import EpisodeDriver, EpisodeSpec, SamplingSpec
from aac.rollout.record import interactive_record
from aac.traces import run_protocol
from tests.test_protocol import INSTANCE, LocalCaller


# ---------------------------------------------------------------- parsing: what is accepted, what is not
@pytest.mark.parametrize("reply, expected", [
    ("Input: (3, 4)", "(3, 4)"),
    ("Input: nothing\n", "nothing"),  # an explicit label holding no literal: reported as written
    ("I will call it.\n```python\n([1, 2],)\n```\nThat should sort.", "([1, 2],)"),
    ("Input: ([1, 2],)\nOutput: [1, 2]\nThe function sorts.", "([1, 2],)"),  # chatter after the line
    ("input: (1, 'a')", "(1, 'a')"),
    ("Input: (1, 2\nOutput: 3", "(1, 2)"),  # brackets left open on a line the model ended: closed
    ("Input: ([1, 2],\nmore text", "([1, 2],)"),
    ("Input: ('a(b', [3\nx", "('a(b', [3])"),  # brackets inside strings do not count
    ("Input: (1, 2", "(1, 2"),  # at the reply's end: maybe cut mid-value, left unparsable
    ("Input: ('ab\nx", "('ab"),  # an open string: where it ends would be a guess
    ("Input: (1, 2]\nx", "(1, 2]"),  # mismatched brackets are not repaired
    ("Input: (1 + 2,)\nOK", "(1 + 2,)"),  # literal_eval only, never evaluated: stays unparsable
])
def test_input_parsing_table(reply, expected):
    assert extract_input(reply) == expected


@pytest.mark.parametrize("reply, decision, summary", [
    ("Decision: NO\nSummary: it sorts the list.", False, "it sorts the list."),
    ("Summary: it sorts the list.\nDecision: YES", True, "it sorts the list."),  # the compact order
    ("Summary: it sorts\nthe list.\ndecision: yes", True, "it sorts the list."),  # run-on summary, lower case
    ("**Decision:** **No**\n**Summary:** it sorts.", False, "it sorts."),
    ("Summary: it sorts.\nDecision: YES or NO", True, "it sorts."),  # the first word after the label counts
])
def test_reflection_parsing_table(reply, decision, summary):
    r = parse_reflection(reply)
    assert r.ok and (r.decision, r.summary) == (decision, summary)


@pytest.mark.parametrize("reply", [
    "Summary: it sorts the list.",  # no decision
    "Decision: NO",  # no summary
    "Summary: it sorts.\nI am not sure yet, YES it might be",  # a decision after the summary must be a line
    "Summary: it sorts.\nDecision: maybe",
])
def test_reflection_parsing_rejects(reply):
    assert not parse_reflection(reply).ok


# ---------------------------------------------------------------- prompt styles and answer cues
def _prompt(phase: Phase, **cfg) -> list[dict]:
    ep = Episode(INSTANCE, ProtocolConfig(**cfg), LocalCaller())
    for reply in ("I try a long list.", "Input: ([4, 1, 9],)", "Decision: NO\nSummary: it sorts."):
        if ep.phase is phase:
            break
        ep.step(reply[len(ep.prefill):] if reply.startswith(ep.prefill) else reply)
    return ep.prompt()


@pytest.mark.parametrize("phase", list(Phase))
def test_compact_style_shows_a_worked_example_as_chat_turns(phase):
    paper, compact = _prompt(phase), _prompt(phase, prompt_style="compact")
    assert [m["role"] for m in paper] == ["system", "user"]
    assert [m["role"] for m in compact] == ["system", "user", "assistant", "user"]
    assert INSTANCE.header in compact[3]["content"] and "Task:" not in compact[3]["content"]
    assert sum(len(m["content"]) for m in compact[2:]) < len(paper[1]["content"])  # shorter context + task


def _cycle(layout: str, style: str, cycles: int = 3) -> list[str]:
    """The chat text of each turn of `cycles` cycles (the window slides: 2 examples + 3 calls > 4)."""
    ep = Episode(INSTANCE, ProtocolConfig(prompt_style=style, prompt_layout=layout, history_window=4), LocalCaller())
    texts = []
    for i in range(cycles):
        for reply in (f"Plan: try a list of {i + 3} items.", f"Input: ({list(range(i + 3))},)",
                      f"Decision: NO\nSummary: it keeps {i} items."):
            texts.append("".join(f"<{m['role']}>{m['content']}" for m in ep.prompt()))
            ep.step(reply)
    return texts


def _common(a: str, b: str) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


@pytest.mark.parametrize("style", ["paper", "compact"])
def test_shared_first_lays_out_what_a_cycle_shares_before_each_turns_own_lines(style):
    per_turn, shared = _cycle("per_turn", style), _cycle("shared_first", style)
    for c in range(0, len(shared), 3):
        reasoning, inp, reflect = shared[c:c + 3]
        # each turn's prompt is the cycle's shared text, then its own lines: the task (reasoning), the plan
        # and the task (input), the plan, the latest call and the task (reflect)
        own = reasoning.rindex("\n") if style == "compact" else reasoning.rindex("\n\nTask:")
        assert _common(reasoning, inp) >= own and _common(reasoning, reflect) >= own
        assert "Latest call:" not in inp[inp.rindex("<user>"):] and reflect[_common(inp, reflect):].lstrip("\n").startswith(
            ("Latest call:", "Task:" if style == "paper" else "Write", "Say"))
        assert _common(inp, reflect) > _common(*per_turn[c + 1:c + 3]) + 50  # the window and the plan, at least
        # the reflect keeps the window its cycle's other turns show (the latest call after it): one call more
        calls = [line for line in reasoning.splitlines() if " -> " in line]
        assert calls and all(line in reflect for line in calls)
    # reasoning and input prompts of the paper style are the per_turn ones, unchanged
    if style == "paper":
        assert [t for i, t in enumerate(shared) if i % 3 != 2] == [t for i, t in enumerate(per_turn) if i % 3 != 2]
    else:
        assert shared[0].count("<assistant>") == 3  # a worked example of a whole cycle, shared by every turn


def test_the_prompt_layout_is_config_and_replays_from_an_eval_run():
    from aac.eval.harness import run_identity

    cfg = compose("env.prompt_layout=shared_first")
    assert ProtocolConfig.from_env(cfg.env).prompt_layout == "shared_first"
    identity = run_identity(cfg, None)
    assert identity["prompt_layout"] == "shared_first"
    assert run_protocol(identity, cfg.env).prompt_layout == "shared_first"
    assert "prompt_layout" not in run_identity(compose("env.prompt_layout=per_turn"), None)  # older runs' identity
    with pytest.raises(ConfigError, match="env.prompt_layout"):
        compose("env.prompt_layout=interleaved")


def test_compact_input_prompt_shows_a_plan_that_copied_the_example_label_once():
    for reply in ("Plan: try a long list.", "plan:try a long list.", "try a long list."):
        ep = Episode(INSTANCE, ProtocolConfig(prompt_style="compact"), LocalCaller())
        ep.step(reply)
        assert "\nPlan: try a long list.\n" in ep.prompt()[-1]["content"]


@pytest.mark.parametrize("style, cues", [("paper", {"input": "Input: (", "reflect": "Decision:"}),
                                         ("compact", {"input": "Input: (", "reflect": "Summary:"})])
def test_answer_cues_prefill_input_and_reflect(style, cues):
    for phase in Phase:
        with_cue = _prompt(phase, prompt_style=style, answer_cues=True)
        without = _prompt(phase, prompt_style=style)
        if phase.value in cues:
            assert with_cue[:-1] == without and with_cue[-1] == {"role": "assistant", "content": cues[phase.value]}
        else:
            assert with_cue == without


def test_a_cued_episode_parses_cue_plus_continuation_and_records_the_cue():
    cued = Episode(INSTANCE, ProtocolConfig(prompt_style="compact", answer_cues=True), LocalCaller())
    plain = Episode(INSTANCE, ProtocolConfig(prompt_style="compact"), LocalCaller())
    continuations = ["Try [4, 1, 9].", "[4, 1, 9],)\nOutput: [9, 4]", " the two largest, largest first.\nDecision: YES"]
    for reply in continuations:
        a = cued.step(reply)
        plain.step(reply)
        assert a.response == reply and a.text == (a.prefill + reply).strip()
    steps = cued.steps
    assert [s.prefill for s in steps] == ["", "Input: (", "Summary:"]
    assert steps[1].parsed == "([4, 1, 9],)" and steps[1].call.output == [9, 4]
    assert cued.concluded and cued.hypothesis == "the two largest, largest first."
    # the same text without its cue: another call (the list spread into three arguments), no decision
    assert plain.steps[1].parsed == "[4, 1, 9]" and not plain.steps[2].parse_ok
    played = SimpleNamespace(episode=cued, generated_tokens=0, engine_errors=0, elapsed_s=0.0)
    record = interactive_record(played)
    assert [s["prefill"] for s in record["steps"]] == ["", "Input: (", "Summary:"]
    assert record["steps"][1]["response"] == continuations[1]


@pytest.mark.slow  # loads a tokenizer
def test_prefilled_chat_renders_the_cue_as_open_prompt_tokens(smollm2_path):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(smollm2_path)
    chat = _prompt(Phase.INPUT, prompt_style="compact", answer_cues=True)
    assert continuation(chat) == {"add_generation_prompt": False, "continue_final_message": True}
    ids = render_chat(tok, chat)
    open_turn = render_chat(tok, chat[:-1])  # the assistant turn opened, nothing in it yet
    assert ids[:len(open_turn)] == open_turn
    assert tok.decode(ids[len(open_turn):]) == "Input: ("  # the cue, and no end-of-turn after it


# ---------------------------------------------------------------- per-phase token budgets
class Budgets(GenerateOnly):
    """Scripted replies; records each request's token budget (and stop strings) by phase."""

    def __init__(self):
        self.seen: list[tuple[str, int]] = []
        self.stops: list[tuple[str, list[str] | None, bool]] = []

    def generate(self, requests):
        out = []
        for r in requests:
            phase = ("input" if r.messages[-1]["content"] == "Input: (" else
                     "reflect" if r.messages[-1]["content"] == "Summary:" else "reasoning")
            self.seen.append((phase, r.sampling.max_tokens))
            self.stops.append((phase, r.sampling.stop, r.sampling.include_stop))
            text = {"input": "3, 1],)", "reflect": " sorts.\nDecision: YES", "reasoning": "plan"}[phase]
            out.append(GenResult(text, [], [1], None, "stop", None, None))
        return out


def test_per_phase_budgets_reach_each_turns_request():
    engine = Budgets()
    sampling = SamplingSpec(1.0, 1.0, 48, max_tokens_per_phase={"input": 12, "reflect": 64})
    driver = EpisodeDriver(engine, ProtocolConfig(prompt_style="compact", answer_cues=True), LocalCaller(), sampling)
    played, _ = driver.play([EpisodeSpec(0, INSTANCE)])
    assert engine.seen == [("reasoning", 48), ("input", 12), ("reflect", 64)] and played[0].episode.concluded
    assert engine.stops == [("reasoning", None, False), ("input", None, False), ("reflect", None, False)]


def test_per_phase_stops_reach_each_turns_request_kept_in_the_reply():
    engine = Budgets()
    sampling = SamplingSpec(1.0, 1.0, 48, stop_per_phase={"input": ("\n",), "reflect": ("Decision: YES", "Decision: NO")})
    driver = EpisodeDriver(engine, ProtocolConfig(prompt_style="compact", answer_cues=True), LocalCaller(), sampling)
    driver.play([EpisodeSpec(0, INSTANCE)])
    assert engine.stops == [("reasoning", None, False), ("input", ["\n"], True),
                            ("reflect", ["Decision: YES", "Decision: NO"], True)]
    with pytest.raises(ValueError, match="stop_per_phase: reflect"):
        SamplingSpec(1.0, 1.0, 48, stop_per_phase={"reflect": ("",)})
    with pytest.raises(ConfigError, match="rollout.stop_per_phase"):
        compose("+rollout.stop_per_phase={plan: [x]}")
    with pytest.raises(ConfigError, match="eval.stop_per_phase"):
        compose("+eval.stop_per_phase={input: []}")


def test_settings_flow_from_config_to_sampling_eval_identity_and_sft_replay():
    from aac.eval.harness import run_identity

    cfg = compose("env.prompt_style=compact", "env.answer_cues=true", "rollout.max_tokens_per_turn=48",
                  "+rollout.max_tokens_per_phase={input:24}", "+eval.max_tokens_per_phase={reflect:64}")
    spec = SamplingSpec.from_config(cfg.rollout, cfg.rollout.top_p)
    assert spec.for_turn(0, 0, 1, "input").max_tokens == 24 and spec.for_turn(0, 0, 2, "reflect").max_tokens == 48
    protocol = ProtocolConfig.from_env(cfg.env)
    assert (protocol.prompt_style, protocol.answer_cues) == ("compact", True)
    assert ProtocolConfig.from_eval(cfg.eval, cfg.env).prompt_style == "compact"
    identity = run_identity(cfg, None)
    assert (identity["prompt_style"], identity["answer_cues"], identity["max_tokens_per_phase"]) == (
        "compact", True, {"reflect": 64})
    stopped = run_identity(compose("+eval.stop_per_phase={input: [')']}"), None)
    assert stopped["stop_per_phase"] == {"input": [")"]}  # a run that stopped replies early says so
    paper = compose()
    assert not {"prompt_style", "answer_cues", "max_tokens_per_phase"} & set(run_identity(paper, None))
    replayed = run_protocol(identity, paper.env)  # SFT rebuilds the prompts the run showed
    assert (replayed.prompt_style, replayed.answer_cues) == ("compact", True)


def test_bad_settings_are_refused_in_one_line():
    with pytest.raises(ConfigError, match="max_tokens_per_phase"):
        compose("+rollout.max_tokens_per_phase={inputs:24}")
    with pytest.raises(ValueError, match="max_tokens_per_phase"):
        SamplingSpec(1.0, 1.0, 8, max_tokens_per_phase={"input": 0})
    with pytest.raises(ConfigError, match="env.prompt_style"):
        compose("env.prompt_style=chatty")


def test_the_demo_recipe_plays_compact_prompts_with_cues_and_short_input_turns():
    cfg = compose("+recipe=smollm2_cpu")
    assert (cfg.env.prompt_style, cfg.env.answer_cues) == ("compact", True)
    budgets = {"reasoning": 32, "input": 24}
    assert cfg.rollout.max_tokens_per_phase == budgets and cfg.eval.max_tokens_per_phase == budgets
    assert cfg.critic.scoring == "logprob"  # one prefill per judgment on the CPU engine


def test_the_shaped_input_cue_opens_the_first_argument_as_the_context_does():
    """`env.shaped_input_cue`: `Input: ([` where the first context example's input opens with a list; the reply
    continues it, and the same continuation under the plain cue is another input (three arguments)."""
    from aac.env.protocol import Observation, _arg0_opening

    assert INSTANCE.train_examples[0][0].startswith("([")
    shaped = Episode(INSTANCE, ProtocolConfig(prompt_style="compact", answer_cues=True, shaped_input_cue=True),
                     LocalCaller())
    plain = Episode(INSTANCE, ProtocolConfig(prompt_style="compact", answer_cues=True), LocalCaller())
    for ep in (shaped, plain):
        ep.step("Try 4, 1 and 9.")
    assert shaped.prompt()[-1] == {"role": "assistant", "content": "Input: (["}
    a, b = shaped.step("4, 1, 9],)"), plain.step("4, 1, 9],)")
    assert a.parsed == "([4, 1, 9],)" and a.call.output == [9, 4] and b.parsed != a.parsed
    obs = [Observation("('ab', 2)", "'abab'")], [Observation("(3, [1])", "4")], [Observation('({"a": 1},)', "1")], []
    assert [_arg0_opening(o) for o in obs] == ["'", "", "{", ""]  # a number opens nothing; no context, nothing
    with pytest.raises(ConfigError, match="env.shaped_input_cue=true .* needs env.answer_cues=true"):
        compose("env.shaped_input_cue=true")
    cfg = compose("env.answer_cues=true", "env.shaped_input_cue=true")
    from aac.eval.harness import run_identity

    identity = run_identity(cfg, None)
    assert identity["shaped_input_cue"] is True and run_protocol(identity, cfg.env).shaped_input_cue is True
    assert "shaped_input_cue" not in run_identity(compose("env.answer_cues=true"), None)
