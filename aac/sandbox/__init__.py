"""Running untrusted code: isolation, a zygote forking warm children, input parsing and the one output normalisation.

Knows nothing of models or rewards. By job: `result.py` (what a call gives back), `processes.py`
(the zygote and its children, seen from the parent), `pool.py` (which children live, and the
calls). `_worker.py`, `_protocol.py`, `_isolate.py` and `values.py` are stdlib-only: the untrusted
worker loads them by path, without the `aac` package. So are the web domain's `web_service.py` (a REST
service model) and `web_transport.py` (the virtual transport), which a sandbox program of that domain
loads by path."""

from aac.sandbox.pool import DEFAULT_PRELOAD, SandboxPool, default_pool, run_function
from aac.sandbox.result import CallKind, CallResult, SandboxUnavailable, error_result
from aac.sandbox.values import InputParseError, normalize, outputs_match, parse_input

__all__ = ["DEFAULT_PRELOAD", "CallKind", "CallResult", "InputParseError", "SandboxPool", "SandboxUnavailable",
           "default_pool", "error_result", "normalize", "outputs_match", "parse_input", "run_function"]
