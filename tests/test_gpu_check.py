"""benchmarks/gpu_check.py --cpu-rehearsal: the device check's code at a tiny GQA shape on the CPU, with
vLLM, Ray and DeepSpeed unimportable (a lent GPU machine has none of them)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

RUN = """
import runpy, sys
for name in ("vllm", "ray", "deepspeed"):
    sys.modules[name] = None  # import fails, as on a machine without them
sys.argv = ["gpu_check.py", "--cpu-rehearsal", "--json", sys.argv[1]]
runpy.run_path({script!r}, run_name="__main__")
"""


def test_the_cpu_rehearsal_runs_every_part_without_vllm_ray_or_deepspeed(tmp_path):
    out = tmp_path / "gpu_check.json"
    code = RUN.format(script=str(ROOT / "benchmarks" / "gpu_check.py"))
    r = subprocess.run([sys.executable, "-c", code, str(out)], cwd=tmp_path, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    result = json.loads(out.read_text())
    assert not [name for name, part in result.items() if isinstance(part, dict) and "error" in part], result
    u = result["learner_update"]
    assert [s["layers"] for s in u["slices"]] == [1, 2] and u["layers"] == 36 and u["tokens_per_s"] > 0
    assert all(s["peak_gb"] > 0 and s["predicted_gb"] > 0 for s in u["slices"])
    assert result["attention"]["kernel"] == "sdpa flash_attention on cpu, grouped heads (enable_gqa)"
    g = result["logprob_gap"]
    assert 0 < g["mean_abs_gap"] < g["sync_bound"] and g["within_bound"]
    assert result["all_reduce"] == {**result["all_reduce"], "backend": "gloo", "ok": True, "back_on": "cpu"}
    summary = r.stdout.strip().splitlines()[-1]
    assert summary.startswith("gpu_check on cpu (rehearsal): update ") and "all-reduce gloo ok" in summary
