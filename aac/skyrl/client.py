"""An aac `Engine` (hf or vllm, on CPU) behind SkyRL's inference interface, so SkyRL's generator drives
episodes with it: token in, token out (SkyRL templates the chat; `GenRequest.prompt_ids`).

It stands in for SkyRL's vLLM servers in both their parts: `generate` for the policy (the model
`policy_model_name` names: the base name runs the base model, another name that adapter), and an
OpenAI-compatible endpoint (`get_endpoint_url`, aac/skyrl/endpoint.py) where the frozen critic asks for
the base model. Weight sync is the trainer's business on GPUs: here an adapter is hot-loaded with the
engine's own `load_adapter`, and the GPU-only calls (weight broadcast, sleep/wake) are refused or no-ops.

Sampling: the request's `sampling_params` (SkyRL passes vLLM's names: max_tokens, temperature, top_p,
logprobs, stop, include_stop_str_in_output) over the client's defaults. Each call runs in a thread:
the engine's batch is one request per agent loop (the hf engine serves them one at a time).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, Optional

from aac.engines.base import Engine, EngineError, GenRequest, Sampling
from aac.skyrl._skyrl import InferenceEngineInterface
from aac.skyrl.endpoint import ChatEndpoint

if TYPE_CHECKING:
    from skyrl.backends.skyrl_train.weight_sync import WeightUpdateRequest
    from skyrl.backends.skyrl_train.weight_sync.transfer_strategy import WeightSyncInitInfo


def sampling_from(params: dict) -> Sampling:
    stop = params.get("stop")
    return Sampling(temperature=float(params.get("temperature", 1.0)), top_p=float(params.get("top_p", 1.0)),
                    max_tokens=int(params.get("max_tokens", 256)), logprobs=params.get("logprobs") is not None,
                    stop=list(stop) if stop else None, include_stop=bool(params.get("include_stop_str_in_output", True)))


class EngineClient(InferenceEngineInterface):
    def __init__(self, engine: Engine, model_name: str, sampling_params: Optional[dict] = None,
                 serve_endpoint: bool = True):
        self.engine, self._model_name = engine, model_name
        self.sampling_params = dict(sampling_params or {})
        self.endpoint = ChatEndpoint(engine, model_name) if serve_endpoint else None

    @property
    def model_name(self) -> str:
        return self._model_name

    async def generate(self, input_batch: dict, model: Optional[str] = None) -> dict:
        if input_batch.get("prompt_token_ids") is None:
            raise EngineError("EngineClient.generate takes prompt_token_ids (SkyRL's token-in generation)")
        sampling = sampling_from({**self.sampling_params, **(input_batch.get("sampling_params") or {})})
        adapter = None if model in (None, self._model_name) else model
        requests = [GenRequest([], sampling, adapter=adapter, prompt_ids=list(ids))
                    for ids in input_batch["prompt_token_ids"]]
        results = await asyncio.to_thread(self.engine.generate, requests)
        failed = [r.error for r in results if r.finish_reason == "error"]
        if failed:
            raise EngineError(f"{len(failed)} of {len(results)} generation(s) failed: {failed[0]}")
        return {"responses": [r.text for r in results], "response_ids": [list(r.token_ids) for r in results],
                "stop_reasons": [r.finish_reason for r in results],
                "response_logprobs": [list(r.logprobs or []) for r in results] if sampling.logprobs else None,
                "prompt_logprobs": None, "rollout_expert_indices": None}

    def get_endpoint_url(self) -> str:
        if self.endpoint is None:
            raise EngineError("this EngineClient serves no endpoint (serve_endpoint=False)")
        return self.endpoint.url

    async def chat_completion(self, request_payload: dict) -> dict:
        raise NotImplementedError("chat completions go over HTTP to get_endpoint_url()")

    async def render_chat_completion(self, request_payload: dict) -> dict:
        raise NotImplementedError("EngineClient takes token ids: SkyRL's generator templates the chat")

    async def completion(self, request_payload: dict) -> dict:
        raise NotImplementedError("EngineClient serves chat completions only (get_endpoint_url())")

    # nothing sleeps, pauses or caches prefixes here
    async def wake_up(self, *args: Any, **kwargs: Any) -> None:
        pass

    async def sleep(self, *args: Any, **kwargs: Any) -> None:
        pass

    async def reset_prefix_cache(self, reset_running_requests: bool = False) -> None:
        pass

    async def pause_generation(self) -> None:
        pass

    async def resume_generation(self) -> None:
        pass

    async def finish_session(self, session_id: str) -> None:
        pass

    async def init_weight_update_communicator(self, init_info: WeightSyncInitInfo) -> None:
        raise NotImplementedError("no weight broadcast to a CPU engine: load adapters with engine.load_adapter")

    async def update_named_weights(self, request: WeightUpdateRequest) -> None:
        raise NotImplementedError("no weight broadcast to a CPU engine: load adapters with engine.load_adapter")

    async def get_world_size(self) -> tuple[int, int]:
        return 1, 1

    async def teardown(self) -> None:
        if self.endpoint is not None:
            self.endpoint.close()
