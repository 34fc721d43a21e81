"""Domains: what kind of black box an episode explores (`env.domain`); the interface is in base.py."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aac.env.domains.base import BlackBox, Caller, Domain, Privileged
from aac.env.domains.library import LibraryDomain
from aac.env.domains.pau import FunctionDomain
from aac.env.domains.stateful import StatefulDomain
from aac.env.domains.web import WebDomain

if TYPE_CHECKING:
    from aac.config import EnvConfig
    from aac.sandbox.pool import SandboxPool

__all__ = ["DOMAINS", "BlackBox", "Caller", "Domain", "Privileged", "get_domain", "open_pool", "pool_preload"]

DOMAINS: dict[str, Domain] = {d.name: d for d in (FunctionDomain(), StatefulDomain(), LibraryDomain(), WebDomain())}


def get_domain(name: str | Domain) -> Domain:
    """The domain called `name` (a Domain passes through); ValueError naming the known ones."""
    if isinstance(name, Domain):
        return name
    try:
        return DOMAINS[str(name)]
    except KeyError:
        raise ValueError(f"env.domain={name!r} is not one of: {', '.join(DOMAINS)}") from None


def open_pool(env: EnvConfig, **overrides: Any) -> SandboxPool:
    """The sandbox pool for an `EnvConfig`: `env.sandbox`, with the domain's modules preloaded
    unless `env.sandbox.preload` names the list itself."""
    from aac.sandbox.pool import SandboxPool

    if get_domain(env.domain).preload and env.sandbox.preload is None:
        overrides = {"preload": pool_preload(env.domain), **overrides}
    return SandboxPool.from_config(env.sandbox, **overrides)


def pool_preload(domain: str | Domain) -> tuple[str, ...]:
    """What a pool of `domain` preloads by default: the sandbox's modules and the domain's."""
    from aac.sandbox.pool import DEFAULT_PRELOAD

    return (*DEFAULT_PRELOAD, *get_domain(domain).preload)
