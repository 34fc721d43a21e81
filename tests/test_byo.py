"""Bring your own: docs/byo.md's commands on the tiny recipe, end to end in subprocesses, with the example
package (examples/fieldnotes, never seen by aac) on PYTHONPATH and no edit inside aac/: build its rows,
train 1 step, evaluate, describe one of its functions, export the adapter. Then what each command wrote:
the exported adapter's (and the merged model's) log-probs against the run's adapter, the model card, the
describe pages (a class of a package too), both forms of `checkpoint=`, and the one-line refusals."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.slow  # subprocesses that load the tiny model and the sandbox

EXAMPLES = ROOT / "examples"
ENV = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE", "PYTHONPATH": os.pathsep.join([str(ROOT), str(EXAMPLES)])}
TINY = ["+recipe=tiny", "logging.progress=false"]
TRAIN = [*TINY, "rollout.placement=local", "max_steps=1", "env.max_steps=3", "rollout.max_tokens_per_turn=8",
         "rollout.functions_per_step=1", "rollout.group_size=2", "env.limit=4"]
FUNCTION = "fieldnotes.units.parse_size"
CLASS = "shopfloor.basket.Basket"  # tests/data/pkgs: a shop library written for the builder's tests
PLAY = [*TINY, "eval.max_calls=1", "eval.max_tokens_per_turn=8", "eval.judge_max_tokens=8", "env.sandbox.workers=1"]


def ok(res) -> str:
    assert res.returncode == 0, (res.stdout[-2000:], res.stderr[-3000:])
    return res.stdout


@pytest.fixture(scope="module")
def guide(tmp_path_factory, run_module):
    """The guide's commands in order (5 of the package's functions, 1 step); returns what they wrote."""
    d = tmp_path_factory.mktemp("byo")
    data, run = d / "data", d / "run"
    built = ok(run_module("aac.data.build", "source=module:fieldnotes", "limit=5", f"out={data}",
                          env=ENV, timeout=120))
    ok(run_module("aac.train", *TRAIN, f"env.data={data}", f"out_dir={run}", env=ENV, timeout=120))
    ckpt = run / "checkpoints" / "step_000001"
    ok(run_module("aac.eval", *PLAY, f"checkpoint={ckpt}", f"data={data}", "eval.code_match=false",
                  f"out_dir={run / 'eval' / 'heldout'}", env=ENV, timeout=120))
    described = ok(run_module("aac.describe", *PLAY, f"checkpoint={ckpt / 'adapter'}", f"target=module:{FUNCTION}",
                              f"out_dir={d / 'described'}", env=ENV, timeout=120))
    exported = ok(run_module("aac.export", f"checkpoint={ckpt}", f"out={d / 'exported'}", env=ENV, timeout=120))
    return {"dir": d, "data": data, "run": run, "ckpt": ckpt, "build_out": built, "describe_out": described,
            "export_out": exported}


def test_guide_writes_what_it_says(guide):
    d = guide["dir"]
    assert "wrote 4 train and 1 test rows" in guide["build_out"]
    test_rows = [json.loads(line) for line in (guide["data"] / "test.jsonl").read_text().splitlines()]
    assert (guide["ckpt"] / "adapter" / "adapter_config.json").is_file()
    report = json.loads((guide["run"] / "eval" / "heldout" / "report.json").read_text())
    assert report["n"] == len(test_rows) == 1 and report["run"]["checkpoint"].endswith("step_000001/adapter")
    page = d / "described" / f"{FUNCTION}.md"
    assert f"-> {page}" in guide["describe_out"]
    text = page.read_text()
    assert "## Description" in text and "Judge's score against the gold description" in text
    assert "Parse a size such as" in text  # the docstring: the gold description
    assert "',)` | `1536` |" in text  # a call of the doctest's value, given at the start
    assert (d / "exported" / "adapter_model.safetensors").is_file() and "peft adapter" in guide["export_out"]


# ---------------------------------------------------------------- export


def _logprobs(model, ids):
    import torch

    with torch.no_grad():
        logits = model(torch.tensor([ids])).logits.float()
    return logits.log_softmax(-1)[0, :-1].gather(-1, torch.tensor(ids[1:])[:, None])[:, 0]


@pytest.fixture(scope="module")
def random_step(guide, make_random_lora, tiny_model_path):
    """A checkpoint of the guide's run holding a random LoRA that changes the model's outputs (one tiny
    training step may leave the adapter at zero: equal log-probs would then prove nothing)."""
    step = guide["run"] / "checkpoints" / "step_000009"
    shutil.copytree(make_random_lora(tiny_model_path, 3, std=0.2), step / "adapter")
    (step / "trainer.json").write_text(json.dumps({"step": 9, "version": 9}))
    return step


def test_exported_adapter_and_merged_model_give_the_runs_log_probs(random_step, tiny_model_path, tmp_path):
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from aac.export import export

    adapter_out = export(str(random_step), str(tmp_path / "adapter"))
    merged_out = export(str(random_step / "adapter"), str(tmp_path / "merged"), merge=True)
    ids = AutoTokenizer.from_pretrained(tiny_model_path)("def test_func(arg0): return arg0 * 2")["input_ids"]

    def base():
        return AutoModelForCausalLM.from_pretrained(tiny_model_path, dtype=torch.float32).eval()

    plain = _logprobs(base(), ids)
    run = _logprobs(PeftModel.from_pretrained(base(), str(random_step / "adapter")).eval(), ids)
    exported = _logprobs(PeftModel.from_pretrained(base(), str(adapter_out)).eval(), ids)
    merged = _logprobs(AutoModelForCausalLM.from_pretrained(str(merged_out), dtype=torch.float32).eval(), ids)
    assert (run - plain).abs().max() > 1e-3  # the adapter matters
    assert torch.equal(exported, run)
    assert torch.allclose(merged, run, atol=1e-5), (merged - run).abs().max()
    assert AutoTokenizer.from_pretrained(str(merged_out))("abc")["input_ids"] == AutoTokenizer.from_pretrained(
        tiny_model_path)("abc")["input_ids"]


def test_model_card_names_base_recipe_steps_data_eval_and_prompts(random_step, tmp_path):
    from aac.export import export

    out = export(str(random_step), str(tmp_path / "x"), base="someone/tiny-base")
    card = (out / "README.md").read_text()
    assert json.loads((out / "adapter_config.json").read_text())["base_model_name_or_path"] == "someone/tiny-base"
    assert "base_model: someone/tiny-base" in card and "| recipe | `tiny` |" in card
    assert "| steps | 9 of 1 (1 function(s) x group 2 a step) |" in card and ", at most 4 functions" in card
    assert "`aac.eval` " in card and "| `env.prompt_style` | `\"paper\"` |" in card  # the guide's eval, the protocol
    for phase in ("**reasoning**", "**input**", "**reflect**"):
        assert phase in card
    assert "[system] You are studying a hidden Python function" in card
    assert "PeftModel.from_pretrained" in card and "--enable-lora --lora-modules aac=" in card
    assert (out / "aac_config.yaml").read_text() == (random_step.parents[1] / "config.yaml").read_text()


def test_export_refuses_in_one_line(random_step, tmp_path):
    from aac.export import ExportError, export, main
    from aac.run_dir import CheckpointError

    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("keep")
    with pytest.raises(ExportError, match="exists and is not an empty folder"):
        export(str(random_step), str(tmp_path / "full"))
    assert (tmp_path / "full" / "x").read_text() == "keep"
    with pytest.raises(CheckpointError, match="no peft adapter"):
        export(str(tmp_path), str(tmp_path / "y"))
    with pytest.raises(SystemExit, match="^aac: usage: missing out=; usage: python -m aac.export"):
        main([f"checkpoint={random_step}"])
    with pytest.raises(SystemExit, match="^aac: usage: merge=yes: expected true or false$"):
        main([f"checkpoint={random_step}", "out=z", "merge=yes"])
    with pytest.raises(SystemExit, match="^aac: no checkpoint: /nonexistent: no peft adapter[^\n]*$"):
        main(["checkpoint=/nonexistent", f"out={tmp_path / 'z'}"])


# ---------------------------------------------------------------- describe


def test_describe_reads_pau_rows_and_builds_services(guide):
    from aac.describe import target_rows

    test_file = guide["data"] / "test.jsonl"
    rows, domain = target_rows(f"jsonl:{test_file}", 0)
    assert domain == "pau" and rows == [json.loads(line) for line in test_file.read_text().splitlines()]
    (service,), domain = target_rows(f"openapi:{EXAMPLES / 'openapi' / 'parcels.yaml'}", 0)
    assert domain == "web" and service["task_id"] == "web/parcels" and "quote the price" in service["description"]


def test_describe_pages_show_calls_results_and_hypotheses(guide):
    from aac.describe import Described

    row = json.loads((guide["data"] / "test.jsonl").read_text().splitlines()[0])
    episode = {"uid": row["task_id"], "description": "adds two numbers", "num_queries": 1, "concluded": True,
               "observations": [["(1, 2)", "3", None], ["(2, 2)", "4", None], ["(5, 'a')", None, "TypeError: bad"]],
               "steps": [{"index": 0, "phase": "reasoning", "prefill": "", "response": "try a string", "parse_ok": True},
                         {"index": 1, "phase": "input", "prefill": "", "response": "Input: (5, 'a')", "parsed": "(5, 'a')",
                          "parse_ok": True, "call": {"output_repr": None, "error": "TypeError: bad"}},
                         {"index": 2, "phase": "reflect", "prefill": "", "response": "Decision: YES\nSummary: adds",
                          "parse_ok": True, "decision": True, "hypothesis": "adds two numbers"}]}
    text = Described(episode, {"judge": {"score": 4.0}}, row).markdown("m")
    assert "concluded after 1 call." in text and "> adds two numbers" in text and "**4 / 5**" in text
    assert "| `(1, 2)` | `3` |" in text and "| `(5, 'a')` |" not in text.split("## Episode")[0]
    assert "| 1 | input | `(5, 'a')` | raised `TypeError: bad` |" in text
    assert "| 2 | reflect | `Decision: YES Summary: adds` | YES, done; hypothesis: `adds two numbers` |" in text
    assert "No gold description" in Described(episode, None, {**row, "description": ""}).markdown("m")


def test_describe_refuses_unknown_targets_in_one_line(tmp_path):
    from aac.config import compose
    from aac.describe import DescribeError, describe, target_rows

    with pytest.raises(DescribeError, match="expected one of module:PKG.func"):
        target_rows("pkg.func", 0)
    with pytest.raises(DescribeError, match="no such file"):
        target_rows(f"jsonl:{tmp_path / 'nope.jsonl'}", 0)
    with pytest.raises(DescribeError, match="target= is required"):
        describe(compose(*TINY, f"out_dir={tmp_path}", config_name="describe_config"))


def test_both_checkpoint_forms_resolve_to_the_adapter(guide):
    from aac.run_dir import adapter_of

    ckpt = guide["ckpt"]
    assert adapter_of(str(ckpt)) == adapter_of(str(ckpt / "adapter")) == ckpt / "adapter"
    # a run dir: its newest intact checkpoint (step_000009 once random_step planted it)
    newest = max((guide["run"] / "checkpoints").glob("step_*"))
    assert adapter_of(str(guide["run"])) == newest / "adapter"


def test_describe_without_a_checkpoint_plays_the_base_model(guide, tmp_path):
    from aac.config import compose
    from aac.describe import describe

    overrides = [*TINY, "eval.max_calls=1", "eval.max_tokens_per_turn=8", "eval.score=false",
                 "env.sandbox.workers=1", f"describe.target=jsonl:{guide['data'] / 'test.jsonl'}", f"out_dir={tmp_path}"]
    ((page, path),) = describe(compose(*overrides, config_name="describe_config"), overrides=overrides)
    assert path.read_text().startswith(f"# {page.episode['uid']}")
    assert "Played by `tiny_qwen3`, " in path.read_text() and page.episode["num_queries"] <= 1
    assert page.score is None and "**not rated**" in path.read_text()  # eval.score=false: no judge
    assert (tmp_path / "index.md").read_text().count("](") == 1


def test_a_package_with_classes_from_its_build_to_describe(guide, tmp_path, monkeypatch):
    # a package never seen by aac (tests/data/pkgs/shopfloor: no doctests): describe's own build makes its
    # functions PAU rows and its classes stateful rows; the guide's checkpoint (trained on functions) plays
    # each domain in a folder of its own, judged on the docstrings; the context shows the package's own test
    from aac.config import compose
    from aac.describe import describe

    monkeypatch.syspath_prepend(str(ROOT / "tests" / "data" / "pkgs"))
    overrides = [*PLAY, f"eval.checkpoint={guide['ckpt']}", "describe.target=module:shopfloor", "eval.limit=1",
                 f"out_dir={tmp_path}"]  # all 7 rows built, the first of each domain played
    pages = describe(compose(*overrides, config_name="describe_config"), overrides=overrides)
    where = {page.episode["uid"]: path.relative_to(tmp_path).as_posix() for page, path in pages}
    function = "shopfloor.pricing.price_with_vat"
    assert where == {CLASS: f"stateful/{CLASS}.md", function: f"pau/{function}.md"}
    assert f"]({where[CLASS]})" in (tmp_path / "index.md").read_text()
    page = next(p for p, _ in pages if p.episode["uid"] == CLASS)
    text = (tmp_path / where[CLASS]).read_text()
    assert page.row["domain"] == "stateful" and "class Obj: new(arg0); m0(arg0); m1(); m2(arg0, arg1); m3(" in text
    assert "> A customer's basket: lines of SKUs with a unit price" in text  # the gold description
    assert "Judge's score against the gold description: **" in text and page.score is not None
    assert "| `m2('CAP-0001', 1)` | raised `KeyError: 'CAP-0001'` |" in text.split("## Episode")[0]
    for domain in ("pau", "stateful"):  # one eval each, of the checkpoint
        assert json.loads((tmp_path / domain / "run.json").read_text())["checkpoint"].endswith("step_000001/adapter")


def test_describe_plays_again_a_function_that_changed_since_the_last_describe_into_its_folder(tmp_path):
    # a module function edited in place keeps its uid (its qualified name): its old episode must not be resumed
    from aac.describe import write_rows
    from aac.eval import records

    rows = [{"task_id": "pkg.f", "test_func_validated": "def test_func(x): return x"},
            {"task_id": "pkg.g", "test_func_validated": "def test_func(x): return 1"}]
    assert write_rows(tmp_path, rows) == []
    for name in (records.EPISODES, records.SCORES):
        records.append_jsonl(tmp_path / name, [{"uid": "pkg.f", "old": True}, {"uid": "pkg.g", "old": True}])
    assert write_rows(tmp_path, rows) == []  # the same rows: both resume
    edited = [{**rows[0], "test_func_validated": "def test_func(x): return -x"}, rows[1]]
    assert write_rows(tmp_path, edited) == ["pkg.f"]
    for name in (records.EPISODES, records.SCORES):
        assert [r["uid"] for r in records.read_jsonl(tmp_path / name)] == ["pkg.g"]
    assert records.read_jsonl(tmp_path / "rows" / "target.jsonl") == edited
