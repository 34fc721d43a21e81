"""benchmarks/gpu_check.py --cpu-rehearsal as a lent GPU machine runs it: started by path from a copy of the
tree (aac/ and benchmarks/ only), with omegaconf, Hydra, Ray, vLLM and DeepSpeed unimportable and the
editable install of aac removed, so that `import aac` works only through the script's own sys.path."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ABSENT = ("omegaconf", "hydra", "ray", "vllm", "deepspeed")
PARTS = ["environment", "tree_attention", "learner_update", "learner_update_flagship", "logprob_gap", "all_reduce"]

# imported at start-up from PYTHONPATH, after site-packages' .pth files ran
SITECUSTOMIZE = f"""
import sys
for name in {ABSENT!r}:
    sys.modules[name] = None  # import fails, as on a machine without them
# the editable install's finder (a .pth in site-packages): aac must come from the tree the script sits in
sys.meta_path[:] = [f for f in sys.meta_path if "__editable__" not in getattr(f, "__module__", "")]
"""


def _bare_tree(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    tree = tmp_path / "tree"
    for part in ("aac", "benchmarks"):
        shutil.copytree(ROOT / part, tree / part, ignore=shutil.ignore_patterns("__pycache__", "*.png"))
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "sitecustomize.py").write_text(SITECUSTOMIZE)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "COV_CORE"))}
    return tree, {**env, "PYTHONPATH": str(tmp_path / "site")}


def _run(tree: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "benchmarks/gpu_check.py", "--cpu-rehearsal", *args], cwd=tree, env=env,
                          capture_output=True, text=True, timeout=900)


def test_the_cpu_rehearsal_runs_every_part_on_a_bare_copy_of_the_tree(tmp_path):
    tree, env = _bare_tree(tmp_path)
    out = tmp_path / "out" / "gpu_check.json"
    r = _run(tree, env, "--out", str(out))
    assert r.returncode == 0, r.stderr[-3000:]
    result = json.loads(out.read_text())
    assert list(result)[0] == "environment" and "skipped" not in result
    assert not [name for name, part in result.items() if isinstance(part, dict) and "error" in part], result
    e = result["environment"]
    assert e["aac_from"] == str(tree / "aac") and e["torch"] and e["transformers"] and e["peft"] and e["python"]
    a = result["tree_attention"]
    assert a["kernel"] == "sdpa flash_attention on cpu per segment, grouped heads (enable_gqa)"
    assert a["segments"]["tokens_per_s"] > 0 and a["flex"]["tokens_per_s"] > 0 and not a["backward"]
    assert a["max_abs_diff"]["out"] < 0.05  # bf16: the two kernels agree
    for key in ("learner_update", "learner_update_flagship"):
        u = result[key]
        assert [s["layers"] for s in u["slices"]] == [1, 2] and u["layers"] == 36 and u["tokens_per_s"] > 0
        assert all(s["peak_gb"] > 0 and s["predicted_gb"] > 0 for s in u["slices"])
    g = result["logprob_gap"]
    assert 0 < g["mean_abs_gap"] < g["sync_bound"] and g["within_bound"]
    assert result["all_reduce"] == {**result["all_reduce"], "backend": "gloo", "ok": True, "back_on": "cpu"}
    summary = r.stdout.strip().splitlines()[-1]
    assert summary.startswith("gpu_check on cpu (rehearsal): update ") and "all-reduce gloo ok" in summary
    assert "omegaconf" not in r.stderr


def test_past_its_deadline_the_check_starts_no_part_and_says_which_it_skipped(tmp_path):
    tree, env = _bare_tree(tmp_path)
    out = tmp_path / "gpu_check.json"
    r = _run(tree, env, "--out", str(out), "--deadline-s", "0")
    assert r.returncode == 0, r.stderr[-3000:]
    result = json.loads(out.read_text())
    assert result["skipped"] == PARTS and "total_s" in result
