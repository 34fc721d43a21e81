"""The `compact` prompt style (`env.prompt_style=compact`): prompts a 135M instruct model can follow.

Measured on SmolLM2-135M-Instruct (benchmarks/bench_protocol.py, RESULTS "Protocol following at
135M"): with the paper style's prose task lines it copies prompt lines back ("Task: plan your next
call...") and never writes a reflect reply that parses. What helps it:
- one short instruction line per turn, after a bare context (header, calls, hypothesis);
- the format shown by a worked example *as chat turns* (a user turn about a toy function and the
  assistant's answer), not described in prose;
- the reflect answer in the order Summary, then Decision: the description first, the verdict on it
  after, and the answer cue (`env.answer_cues`) opens the reply with `Summary:`.
The replies parse with the same rules as the paper style (aac/env/prompts.py).
"""

from __future__ import annotations

from aac.env.prompts import TurnView, calls_block, clip

SYSTEM_PROMPT = ("You explore a hidden Python function, test_func, by calling it. "
                 "Answer in the exact format of the example.")

# the worked example: a toy function that sorts a list
_EXAMPLE_CONTEXT = ("def test_func(arg0):\nCalls (input -> result):\n([3, 1, 2],) -> [1, 2, 3]\n"
                    "(['b', 'a'],) -> ['a', 'b']\nHypothesis: not yet formed")
_EXAMPLE_PLAN = "Plan: try a list with repeated numbers; if it sorts, ([2, 9, 2],) gives [2, 2, 9]."
_EXAMPLE_INPUT = "Input: ([2, 9, 2],)"
_EXAMPLE_LATEST = "Latest call: ([2, 9, 2],) -> [2, 2, 9]"
_EXAMPLE_REFLECT = "Summary: it returns the items of the list in increasing order.\nDecision: NO"

_REASONING_TASK = "Plan your next call in one sentence: the input, and the result your hypothesis predicts."
_INPUT_TASK = "Write the input of your next call as a Python tuple, one value per argument."
_REFLECT_TASK = "Say what test_func does in one sentence, then whether you are sure (Decision: YES or NO)."

# what opens each reply when answer cues are on (the reasoning turn is free text: none)
ANSWER_CUES = {"input": "Input: (", "reflect": "Summary:"}


def _context(view: TurnView) -> str:
    lines = [view.header.strip(),
             calls_block(view.window, view.total_observations, view.max_chars, view.max_window_chars, "Calls"),
             f"Hypothesis: {clip(view.hypothesis, 2 * view.max_chars)}"]
    return "\n".join(lines)


def _chat(example_user: str, example_answer: str, user: str) -> list[dict]:
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": example_user},
            {"role": "assistant", "content": example_answer}, {"role": "user", "content": user}]


def reasoning_prompt(view: TurnView) -> list[dict]:
    return _chat(f"{_EXAMPLE_CONTEXT}\n{_REASONING_TASK}", _EXAMPLE_PLAN, f"{_context(view)}\n{_REASONING_TASK}")


def input_prompt(view: TurnView) -> list[dict]:
    plan = f"Plan: {clip(view.plan or '', view.max_chars)}"
    return _chat(f"{_EXAMPLE_CONTEXT}\n{_EXAMPLE_PLAN}\n{_INPUT_TASK}", _EXAMPLE_INPUT,
                 f"{_context(view)}\n{plan}\n{_INPUT_TASK}")


def reflect_prompt(view: TurnView) -> list[dict]:
    return _chat(f"{_EXAMPLE_CONTEXT}\n{_EXAMPLE_LATEST}\n{_REFLECT_TASK}", _EXAMPLE_REFLECT,
                 f"{_context(view)}\nLatest call: {view.latest}\n{_REFLECT_TASK}")
