"""The DISTILL and CodeARC-SFT recipes: each command of their header composes through the CLI's own
rewriting, and the three steps (teacher run -> aac.sft -> aac.eval of the adapter) set what they claim."""

from __future__ import annotations

import shlex

import pytest

from aac import sft
from aac.cli import ALIASES, _rewrite_argv, rewrite_aliases
from aac.config import compose, resource_dir

JUDGE = ("eval.judge_engine=openai judge=meta-llama/Llama-3.1-70B-Instruct "
         "coder=Qwen/Qwen3-Coder-30B-A3B-Instruct rollout.openai.base_url=http://router:4000/v1")


def header_commands(recipe: str) -> list[tuple[str, list[str]]]:
    """(module, argv) of every `python -m aac.X` line of the recipe's header comment, $JUDGE expanded."""
    out = []
    for line in (resource_dir("recipes") / f"{recipe}.yaml").read_text().splitlines():
        text = line.lstrip("# ").strip()
        if text.startswith("python -m aac."):
            words = shlex.split(text.replace("$JUDGE", JUDGE))
            out.append((words[2], words[3:]))
    return out


def composed(module: str, argv: list[str]):
    if module == "aac.eval":
        return compose(*_rewrite_argv(rewrite_aliases(argv), None), config_name="eval_config")
    assert module == "aac.sft"
    return compose(*_rewrite_argv(rewrite_aliases(argv, ALIASES["aac.sft"]), sft.DEFAULT_RECIPE))


@pytest.mark.parametrize("recipe, teacher", [("distill", "none"), ("codearc_sft", "answer_aware")])
def test_the_header_commands_compose_and_chain(recipe, teacher):
    steps = header_commands(recipe)
    assert [m for m, _ in steps] == ["aac.eval", "aac.sft", "aac.eval"]
    play, train, evaluate = (composed(m, a) for m, a in steps)

    # 1. the teacher: an endpoint model on the training functions, greedy, scored by the paper's judge
    assert play.recipe_name == recipe and play.eval.teacher == teacher
    assert (play.eval.data, play.eval.split, play.eval.temperature) == ("DJ-Research/PAU-Benchmark", "train", 0)
    assert play.model.name == "gpt-4o-mini" and play.eval.engine == "openai" and play.model.chat_template_kwargs == {}
    assert play.eval.judge_model == "meta-llama/Llama-3.1-70B-Instruct" and play.eval.score
    # 2. the student (Qwen3-1.7B) on the teacher's kept traces, with LoRA that can start an RL run
    assert train.sft.data == play.out_dir and train.model.name == "qwen3_1_7b" and train.sft.min_score == 4
    assert train.learner.lora_r == 16 and train.sft.epochs == 2
    # 3. the adapter as an ordinary actor on the test functions, judged as the teacher's run was
    assert evaluate.eval.checkpoint == train.out_dir and evaluate.eval.teacher == "none"
    assert (evaluate.eval.data, evaluate.eval.split) == ("DJ-Research/PAU-Benchmark", "test")
    assert evaluate.model.name == train.model.name and evaluate.eval.judge_model == play.eval.judge_model


def test_codearc_sft_is_distill_with_the_answer_aware_teacher():
    distill, codearc = compose("+recipe=distill"), compose("+recipe=codearc_sft")
    assert (distill.eval.teacher, codearc.eval.teacher) == ("none", "answer_aware")
    codearc.eval.teacher, codearc.recipe_name = distill.eval.teacher, distill.recipe_name
    assert codearc == distill


def test_sft_takes_several_runs_in_one_data_argument():
    short = ALIASES["aac.sft"]
    assert rewrite_aliases(["data=a,b", "min_score=3", "sft.data=c,d", "x=1"], short) == [
        "sft.data='a,b'", "sft.min_score=3", "sft.data='c,d'", "x=1"]
    assert compose(*rewrite_aliases(["+recipe=tiny", "data=runs/a,runs/b"], short)).sft.data == "runs/a,runs/b"
