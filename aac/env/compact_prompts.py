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

from aac.env.prompts import TurnView, Wording, calls_block, clip

# the PAU function domain's words; the worked example is a toy function that sorts a list
COMPACT = Wording(
    system=("You explore a hidden Python function, test_func, by calling it. "
            "Answer in the exact format of the example."),
    reasoning_task="Plan your next call in one sentence: the input, and the result your hypothesis predicts.",
    input_task="Write the input of your next call as a Python tuple, one value per argument.",
    reflect_task="Say what test_func does in one sentence, then whether you are sure (Decision: YES or NO).",
    cues=(("input", "Input: ("), ("reflect", "Summary:")),  # the reasoning turn is free text: no cue
    example=("def test_func(arg0):\nCalls (input -> result):\n([3, 1, 2],) -> [1, 2, 3]\n"
             "(['b', 'a'],) -> ['a', 'b']\nHypothesis: not yet formed",
             "Plan: try a list with repeated numbers; if it sorts, ([2, 9, 2],) gives [2, 2, 9].",
             "Input: ([2, 9, 2],)",
             "Latest call: ([2, 9, 2],) -> [2, 2, 9]",
             "Summary: it returns the items of the list in increasing order.\nDecision: NO"),
)


def _context(view: TurnView) -> str:
    lines = [view.header.strip(),
             calls_block(view.window, view.total_observations, view.max_chars, view.max_window_chars, "Calls"),
             f"Hypothesis: {clip(view.hypothesis, 2 * view.max_chars)}"]
    return "\n".join(lines)


def _chat(view: TurnView, example_user: str, example_answer: str, user: str) -> list[dict]:
    return [{"role": "system", "content": view.wording.system}, {"role": "user", "content": example_user},
            {"role": "assistant", "content": example_answer}, {"role": "user", "content": user}]


def reasoning_prompt(view: TurnView) -> list[dict]:
    w = view.wording
    context, plan = w.example[0], w.example[1]
    return _chat(view, f"{context}\n{w.reasoning_task}", plan, f"{_context(view)}\n{w.reasoning_task}")


def _plan(view: TurnView) -> str:
    # the worked example's plan opens with "Plan:", so a reply that copies it must not read "Plan: Plan:"
    own = (view.plan or "").strip()
    own = own[len("Plan:"):].lstrip() if own.lower().startswith("plan:") else own
    return f"Plan: {clip(own, view.max_chars)}"


def input_prompt(view: TurnView) -> list[dict]:
    w = view.wording
    context, example_plan, example_input = w.example[:3]
    return _chat(view, f"{context}\n{example_plan}\n{w.input_task}", example_input,
                 f"{_context(view)}\n{_plan(view)}\n{w.input_task}")


def reflect_prompt(view: TurnView) -> list[dict]:
    w = view.wording
    context, latest, answer = w.example[0], w.example[3], w.example[4]
    return _chat(view, f"{context}\n{latest}\n{w.reflect_task}", answer,
                 f"{_context(view)}\nLatest call: {view.latest}\n{w.reflect_task}")


# ---------------------------------------------------------------- the shared_first layout
# Every turn opens with the system prompt and the worked example of a whole cycle (three exchanges),
# then the cycle's context, the plan (input, reflect), the latest call (reflect), and its task last:
# the three turns of a cycle share all but their last lines.


def _shared(view: TurnView, *lines: str) -> list[dict]:
    w = view.wording
    context, plan, example_input, latest, answer = w.example
    return [{"role": "system", "content": w.system},
            {"role": "user", "content": f"{context}\n{w.reasoning_task}"}, {"role": "assistant", "content": plan},
            {"role": "user", "content": w.input_task}, {"role": "assistant", "content": example_input},
            {"role": "user", "content": f"{latest}\n{w.reflect_task}"}, {"role": "assistant", "content": answer},
            {"role": "user", "content": "\n".join([_context(view), *lines])}]


def shared_reasoning_prompt(view: TurnView) -> list[dict]:
    return _shared(view, view.wording.reasoning_task)


def shared_input_prompt(view: TurnView) -> list[dict]:
    return _shared(view, _plan(view), view.wording.input_task)


def shared_reflect_prompt(view: TurnView) -> list[dict]:
    return _shared(view, _plan(view), f"Latest call: {view.latest}", view.wording.reflect_task)
