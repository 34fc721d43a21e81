"""The interactive protocol (docs/method.md §4) as a plain state machine: reasoning → input → reflect, repeated.

The episode owns no model: `prompt()` gives the chat for the current turn, `step(reply)` consumes
the model's reply and returns a `StepRecord`. Each turn is an independent chat (system + user)
built from the header, the window of recent observations and the hypothesis.

Rules a reward schedule can rely on:
- an input turn whose reply holds no parsable input has `parse_ok=False`, `call=None` and the reason
  in `error`; no call is made. So "unparsable or the call raised/timed out" is
  `not step.parse_ok or not step.call.ok`.
- a reflect turn that does not parse has `parse_ok=False`, `decision=None`; the hypothesis is kept
  and the episode goes on (even if a YES could be read).
- the step that reaches `max_steps` ends the episode with `timed_out=True`, unless it is a YES.
- `max_calls` counts input turns (parsable or not, so an episode always ends); when it is spent, the
  episode ends after that cycle's reflect, concluded only on YES.

Prompt styles (`prompt_style`): `paper` (aac/env/prompts.py, the default of paper runs) and `compact`
(aac/env/compact_prompts.py, for 135M models). With `answer_cues`, the input and reflect prompts end
in an assistant message holding the style's answer cue (e.g. `Input: (`): the engine continues it
(the cue's tokens are prompt tokens, so the learner sees exactly what the engine saw), `step()` takes
the continuation and parses cue + continuation, and the step records the cue in `prefill`.

Prompt layouts (`prompt_layout`): `per_turn` lays each turn's prompt out on its own (the compact style's
worked example is one exchange of the turn's own phase; the paper style's reflect shows one call
fewer in its window, then the latest call). `shared_first` puts what the three turns of a cycle share
first and each turn's own lines last: the system prompt (compact: a worked example of a whole cycle),
the header, the window and the hypothesis; then the plan (input, reflect); then the latest call
(reflect); then the turn's task. So a cycle's input prompt extends its reasoning prompt's context, and
its reflect prompt extends its input prompt's, and the learner's prefix tree (aac/learner/packing.py)
and vLLM's prefix cache compute that text once. The paper style keeps its reasoning and input prompts
exactly; its reflect shows the plan and the whole window before the latest call.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from aac.config import EnvConfig, EvalConfig
from aac.env import compact_prompts, prompts
from aac.env.domains import Caller, get_domain
from aac.env.observation import Observation
from aac.env.prompts import in_context_prompt, parse_description  # noqa: F401  (the eval harness's API)
from aac.phase import Phase
from aac.sandbox.values import InputParseError

if TYPE_CHECKING:
    from aac.env.instance import Instance
    from aac.sandbox.pool import SandboxPool
    from aac.sandbox.result import CallResult
__all__ = ["Caller", "Episode", "Observation", "Phase", "ProtocolConfig", "StepRecord", "in_context_prompt",
           "parse_description", "phase_of_turn", "sandbox_caller"]


_NEXT = {Phase.REASONING: Phase.INPUT, Phase.INPUT: Phase.REFLECT, Phase.REFLECT: Phase.REASONING}
_CYCLE = tuple(Phase)  # an episode starts at reasoning and every step moves to _NEXT


def phase_of_turn(index: int) -> Phase:
    """The phase of an episode's turn `index` (0-based): the protocol's order fixes it, whatever the replies."""
    return _CYCLE[index % len(_CYCLE)]
# each (style, layout)'s prompt builders, in phase order (the words in them are the domain's)
_BUILDERS = {("paper", "per_turn"): (prompts.reasoning_prompt, prompts.input_prompt, prompts.reflect_prompt),
           ("paper", "shared_first"): (prompts.reasoning_prompt, prompts.input_prompt, prompts.shared_reflect_prompt),
           ("compact", "per_turn"): (compact_prompts.reasoning_prompt, compact_prompts.input_prompt,
                                     compact_prompts.reflect_prompt),
           ("compact", "shared_first"): (compact_prompts.shared_reasoning_prompt, compact_prompts.shared_input_prompt,
                                         compact_prompts.shared_reflect_prompt)}
_STYLES = {key: dict(zip(_CYCLE, builders)) for key, builders in _BUILDERS.items()}


_ENV = EnvConfig()  # the schema's defaults, stated once there


def _arg0_opening(context: list[Observation]) -> str:
    """The bracket or quote that opens the first argument of the first context example's input (`[` of
    `([1, 2], 3)`, `'` of `('ab',)`), or "" (a number, no context): what `shaped_input_cue` adds to the cue."""
    first = context[0].input.strip() if context else ""
    return first[1] if first.startswith("(") and len(first) > 1 and first[1] in "[{'\"" else ""


@dataclass
class ProtocolConfig:
    """What the protocol needs of `EnvConfig` (training, `from_env`) or `EvalConfig` (held-out,
    `from_eval`); its defaults are the schema's. Values were checked when the config was loaded."""

    history_window: int = _ENV.history_window  # observations shown per prompt (release: 5 train, 10 eval)
    max_steps: int = _ENV.max_steps  # turns per episode (T_max)
    max_calls: int | None = _ENV.max_calls  # input turns per episode (eval: 25)
    call_timeout_s: float = _ENV.call_timeout_s
    spread_list: bool = _ENV.spread_list_args  # only used by `sandbox_caller`; the caller owns the call's semantics
    # prompt size bounds (small models have 2048-token contexts): each input and result is clipped to
    # max_observation_chars (plan and hypothesis to twice that); the window's lines share
    # max_window_chars, the oldest dropped first (the latest call is always shown)
    max_observation_chars: int = _ENV.max_observation_chars
    max_window_chars: int = _ENV.max_window_chars
    max_input_chars: int = _ENV.sandbox.max_input_chars
    max_input_depth: int = _ENV.sandbox.max_input_depth
    constrained_format: bool = _ENV.constrained_format  # decode each turn inside its phase's grammar (aac/env/grammar.py)
    prompt_style: str = str(_ENV.prompt_style)  # paper | compact (short prompts, a worked example as chat turns)
    prompt_layout: str = str(_ENV.prompt_layout)  # per_turn | shared_first (a cycle's shared text first)
    answer_cues: bool = _ENV.answer_cues  # open input and reflect replies with the style's answer cue (a prefill)
    shaped_input_cue: bool = _ENV.shaped_input_cue  # the input cue opens arg0 as the first context example does
    input_literals: tuple[str, ...] | None = None  # constrained inputs' alphabet (None: aac.env.grammar.LITERALS)

    def __post_init__(self) -> None:
        self.prompt_style, self.prompt_layout = str(self.prompt_style), str(self.prompt_layout)
        if self.input_literals is not None:
            self.input_literals = tuple(str(lit) for lit in self.input_literals)

    @classmethod
    def from_env(cls, env: EnvConfig) -> ProtocolConfig:
        """From `EnvConfig`, as used in training."""
        return cls(history_window=env.history_window, max_steps=env.max_steps, max_calls=env.max_calls,
                   call_timeout_s=env.call_timeout_s, spread_list=env.spread_list_args,
                   max_observation_chars=env.max_observation_chars, max_window_chars=env.max_window_chars,
                   max_input_chars=env.sandbox.max_input_chars, max_input_depth=env.sandbox.max_input_depth,
                   constrained_format=env.constrained_format, prompt_style=str(env.prompt_style),
                   prompt_layout=str(env.prompt_layout), answer_cues=bool(env.answer_cues),
                   shaped_input_cue=bool(env.shaped_input_cue), input_literals=env.input_literals)

    @classmethod
    def from_eval(cls, ev: EvalConfig, env: EnvConfig | None = None) -> ProtocolConfig:
        """From `EvalConfig` (or what a run recorded of it): its window, call budget and timeout, enough
        steps for every call; the rest from `env`."""
        base = cls.from_env(env) if env is not None else cls()
        return replace(base, history_window=ev.history_window, max_steps=3 * ev.max_calls, max_calls=ev.max_calls,
                       call_timeout_s=ev.call_timeout_s)


@dataclass
class StepRecord:
    index: int  # 0-based turn number in the episode
    phase: Phase
    prompt: list[dict]
    response: str  # the raw reply (the engine's continuation of `prefill`)
    text: str  # prefill + reply, without thinking
    parse_ok: bool
    parsed: str | None  # reasoning: the plan; input: the input literal; reflect: the summary
    decision: bool | None  # reflect turns that parsed: True = YES
    call: CallResult | None  # input turns that parsed
    hypothesis: str  # after this step
    done: bool
    timed_out: bool
    error: str | None = None  # why the reply did not parse
    end_reason: str | None = None  # on the last step: concluded | step_limit | call_limit
    prefill: str = ""  # the answer cue the prompt ended with (the reply continues it)


class Episode:
    def __init__(self, instance: Instance, cfg: ProtocolConfig | None = None, caller: Caller | None = None):
        self.instance = instance
        self.cfg = cfg or ProtocolConfig()
        self.caller = caller or sandbox_caller(None, spread_list=self.cfg.spread_list)
        self.domain = get_domain(instance.domain)
        self._box = self.domain.open(instance, lambda *call: self.caller(*call))  # `caller` may be swapped
        self._wording = self.domain.wording(self.cfg.prompt_style)
        self._observations = self.domain.context(instance)
        self._shape = _arg0_opening(self._observations)
        self._steps: list[StepRecord] = []
        self._phase = Phase.REASONING
        self._hypothesis = prompts.INITIAL_HYPOTHESIS
        self._plan = ""
        self._latest = ""  # reflect: the latest call's line (or why there was none)
        self._latest_is_call = False
        self._input_turns = 0
        self._num_queries = 0
        self._concluded = False
        self._end_reason: str | None = None

    # ------------------------------------------------------------ state
    @property
    def phase(self) -> Phase:
        return self._phase

    @property
    def done(self) -> bool:
        return self._end_reason is not None

    @property
    def steps(self) -> list[StepRecord]:
        return list(self._steps)

    @property
    def hypothesis(self) -> str:
        return self._hypothesis

    @property
    def observations(self) -> list[Observation]:
        """Every observation: the context examples, then each call made."""
        return list(self._observations)

    @property
    def num_queries(self) -> int:
        """Calls actually made (unparsable inputs make none)."""
        return self._num_queries

    @property
    def concluded(self) -> bool:
        return self._concluded

    @property
    def timed_out(self) -> bool:
        return self._end_reason == "step_limit"

    @property
    def end_reason(self) -> str | None:
        return self._end_reason

    def summary(self) -> dict:
        return {"uid": self.instance.uid, "description": self._hypothesis, "num_queries": self._num_queries,
                "concluded": self._concluded, "timed_out": self.timed_out, "steps": len(self._steps),
                "end_reason": self._end_reason, "parse_failures": sum(not s.parse_ok for s in self._steps)}

    # ------------------------------------------------------------ turns
    @property
    def prefill(self) -> str:
        """The answer cue the current turn's reply continues ("" without answer cues)."""
        cue = self._wording.cue(self._phase.value) if self.cfg.answer_cues else ""
        if self.cfg.shaped_input_cue and cue.endswith("(") and self._shape:
            return cue + self._shape
        return cue

    def prompt(self) -> list[dict]:
        """The chat messages for the current turn (ending in the assistant's prefill when it has one)."""
        if self.done:
            raise RuntimeError("the episode is over: no further prompt")
        # reflect shows the latest call on its own line: per_turn, after the window's other slots;
        # shared_first, after the whole window the cycle's other turns show (so their prompts are its prefix)
        apart = self._phase is Phase.REFLECT and self._latest_is_call
        pool = self._observations[:-1] if apart else self._observations
        size = self.cfg.history_window - int(apart and self.cfg.prompt_layout == "per_turn")
        view = prompts.TurnView(
            header=self.instance.header, window=pool[max(0, len(pool) - size):] if size > 0 else [],
            total_observations=len(pool), hypothesis=self._hypothesis, plan=self._plan,
            latest=self._latest, latest_is_call=apart, max_chars=self.cfg.max_observation_chars,
            max_window_chars=self.cfg.max_window_chars, wording=self._wording)
        messages = _STYLES[self.cfg.prompt_style, self.cfg.prompt_layout][self._phase](view)
        cue = self.prefill
        return [*messages, {"role": "assistant", "content": cue}] if cue else messages

    def step(self, response: str) -> StepRecord:
        """Consume the model's reply to `prompt()` (its continuation of the prefill); returns what happened."""
        if self.done:
            raise RuntimeError("the episode is over: step() after done")
        messages, cue = self.prompt(), self.prefill
        reply = cue + response
        text = prompts.strip_think(reply)
        turn = {Phase.REASONING: self._reasoning, Phase.INPUT: self._input, Phase.REFLECT: self._reflect}
        outcome = turn[self._phase](reply, text)
        index = len(self._steps)
        if self._concluded:
            self._end_reason = "concluded"
        elif index + 1 >= self.cfg.max_steps:
            self._end_reason = "step_limit"
        elif (self._phase is Phase.REFLECT and self.cfg.max_calls is not None
              and self._input_turns >= self.cfg.max_calls):
            self._end_reason = "call_limit"
        if self.done:
            self._box.close()
        record = StepRecord(index=index, phase=self._phase, prompt=messages, response=response, text=text,
                            hypothesis=self._hypothesis, done=self.done, timed_out=self.timed_out,
                            end_reason=self._end_reason, prefill=cue, **outcome)
        self._steps.append(record)
        self._phase = _NEXT[self._phase]
        return record

    def _reasoning(self, response: str, text: str) -> dict:
        self._plan = text
        error = None if text else "empty reply"
        return dict(parse_ok=bool(text), parsed=text or None, decision=None, call=None, error=error)

    def _input(self, response: str, text: str) -> dict:
        candidate = self.domain.extract_query(response)
        error = None if candidate is not None else "no input found in the reply"
        if candidate is not None:
            try:
                self.domain.check_query(candidate, spread_list=self.cfg.spread_list,
                                        max_chars=self.cfg.max_input_chars, max_depth=self.cfg.max_input_depth)
            except InputParseError as e:
                error = f"unparsable input: {e}"
        if error is not None:
            self._latest, self._latest_is_call = f"none; your input could not be read ({error})", False
            self._input_turns += 1
            return dict(parse_ok=False, parsed=candidate, decision=None, call=None, error=error)
        # a caller that raises (the sandbox itself failed) leaves the episode as it was: step() can be retried
        call = self._box.call(candidate, self.cfg.call_timeout_s)
        self._input_turns += 1
        self._num_queries += 1
        self._observations.append(Observation(candidate, call.output_repr, call.error))
        self._latest = prompts.format_call(candidate, call.output_repr, call.error, self.cfg.max_observation_chars)
        self._latest_is_call = True
        return dict(parse_ok=True, parsed=candidate, decision=None, call=call, error=None)

    def _reflect(self, response: str, text: str) -> dict:
        reflection = prompts.parse_reflection(response)
        if not reflection.ok:
            return dict(parse_ok=False, parsed=reflection.summary, decision=None, call=None, error=reflection.error)
        self._hypothesis = reflection.summary
        self._concluded = bool(reflection.decision)
        return dict(parse_ok=True, parsed=reflection.summary, decision=reflection.decision, call=None, error=None)


def sandbox_caller(pool: SandboxPool | None, *, spread_list: bool = True) -> Caller:
    """A caller backed by a `SandboxPool`; with None, `run_function` (the process's shared default pool)."""
    from aac.sandbox.pool import run_function

    def call(source: str, input_str: str, timeout_s: float) -> CallResult:
        if pool is None:
            return run_function(source, input_str, timeout_s=timeout_s, spread_list=spread_list)
        return pool.call(source, input_str, timeout_s=timeout_s, spread_list=spread_list)

    return call
