"""The library domain: a real library function (numpy, the standard library) under the unseen name
`test_func`, after the private-library setting (MonkeyEval / BeatNumEval renamed pandas / numpy), so
recalling the API does not help. It is queried like a PAU function (a tuple of arguments) and plays
with the function domain's words; what differs is what the privileged critic sees: the function's
real documentation (the first paragraph of its docstring, the gold description) and the wrapper that
names the real function. Rows come from `aac.data.library` (`builtin:library`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aac.env.domains.base import Privileged
from aac.env.domains.pau import FunctionDomain

if TYPE_CHECKING:
    from aac.env.instance import Instance

SOURCE_LABEL = "Wrapper calling the real library function behind test_func (its true name is in the code)"


class LibraryDomain(FunctionDomain):
    name = "library"
    preload = ("numpy",)  # in the zygote: a new numpy source's first call ~0.23 s -> ~0.035 s

    def privileged(self, instance: Instance) -> Privileged:
        return Privileged(instance.description, instance.code, SOURCE_LABEL)
