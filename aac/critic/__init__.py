"""The privileged critic (SPEC §5): prompts, rating parsing, batching, caching, health counters."""

from aac.critic.critic import Judgment, PrivilegedCritic, make_critic
from aac.critic.parsing import ParsedRating, parse_rating

__all__ = ["Judgment", "ParsedRating", "PrivilegedCritic", "make_critic", "parse_rating"]
