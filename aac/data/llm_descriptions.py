"""Descriptions for built rows whose source has none (CRUXEval), written by an LLM through aac.engines.

`describe_with=KIND:MODEL` (e.g. `hf:smollm2_135m`, `vllm:qwen3_8b`, `openai:gpt-4o-mini` with
OPENAI_BASE_URL/OPENAI_API_KEY) names the engine. The model sees the function's source and its
examples (it is the data builder, not the agent) and writes a short description; a reply with no
usable text leaves the row's description empty. Rows left with an empty description are the ones
a judge score must skip (code match still counts them).
"""

from __future__ import annotations

import dataclasses
import json
import os
import re

from aac.data.sources import clean_description
from aac.env.instance import Instance

_PROMPT = """Here is a Python function and some of its input/output examples.

```python
{code}
```

Examples (input -> output):
{examples}

Describe in one to three plain sentences (at most 60 words) what `test_func` computes from its
arguments, as a reader who cannot see the code would need to know it. Do not restate the code line
by line and do not mention `validate_input_args`. Answer with one line: Description: <text>"""
_ANSWER = re.compile(r"description\s*:\s*(.+)", re.I | re.S)
_THINK = re.compile(r"<think>.*?(</think>|$)", re.S | re.I)


def parse_engine_spec(spec: str) -> tuple[str, str]:
    """`KIND:MODEL` -> (kind, model); a clear error otherwise."""
    from aac.engines import ENGINES

    kind, _, model = spec.partition(":")
    if kind not in ENGINES or not model:
        raise ValueError(f"describe_with={spec}: expected KIND:MODEL with KIND one of {', '.join(ENGINES)}")
    return kind, model


def description_writer(spec: str, max_tokens: int = 160):
    """A function `instances -> instances` that fills empty descriptions with the engine of `spec`."""
    from aac.engines import Sampling, make_engine

    kind, model = parse_engine_spec(spec)
    if kind == "openai":
        from aac.config import OpenAIConfig

        engine = make_engine(kind, model, openai=OpenAIConfig(
            base_url=os.environ.get("OPENAI_BASE_URL", OpenAIConfig.base_url), model=model))
    else:
        from aac.models import resolve_model

        engine = make_engine(kind, resolve_model(model), enable_lora=False)

    def describe(instances: list[Instance]) -> list[Instance]:
        return describe_with(engine, instances, Sampling(temperature=0.0, max_tokens=max_tokens))

    return describe


def describe_with(engine, instances: list[Instance], sampling) -> list[Instance]:
    """The instances, those with an empty description given the engine's (greedy) description."""
    from aac.engines import GenRequest

    todo = [k for k, inst in enumerate(instances) if not inst.description]
    replies = engine.generate([GenRequest([{"role": "user", "content": description_prompt(instances[k])}],
                                          sampling) for k in todo])
    out = list(instances)
    for k, reply in zip(todo, replies):
        out[k] = dataclasses.replace(instances[k], description=parse_description(reply.text))
    return out


def description_prompt(inst: Instance) -> str:
    shown = [*inst.train_examples, *inst.test_examples][:6]
    examples = "\n".join(f"{i} -> {json.dumps(o) if not isinstance(o, str) else repr(o)}" for i, o in shown)
    return _PROMPT.format(code=inst.code, examples=examples)


def parse_description(text: str) -> str:
    """The text after `Description:` (or the whole reply), one short paragraph; '' when empty."""
    text = _THINK.sub("", text or "").strip()
    m = _ANSWER.search(text)
    body = (m.group(1) if m else text).strip().split("\n\n")[0]
    return clean_description(body, "test_func")
