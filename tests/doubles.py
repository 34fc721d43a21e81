"""A base for scripted test engines that write only `generate`: the rest of `Engine` (the lockstep
`submit` / `collect` the episode driver uses included) comes with it."""

from __future__ import annotations

from aac.engines import Engine


class GenerateOnly(Engine):
    def load_adapter(self, name, path, version):
        raise NotImplementedError("a scripted engine loads no adapter")

    def adapter_version(self, name):
        return None

    def score(self, prompt_ids, completion_ids, adapter):
        raise NotImplementedError("a scripted engine scores nothing")

    def close(self):
        pass
