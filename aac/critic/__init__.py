"""The privileged critic (SPEC §5): prompts, rating parsing, batching, caching, health counters."""

from aac.critic.critic import PrivilegedCritic, with_rates
from aac.critic.judgment import Judgment
from aac.critic.parsing import ParsedRating, parse_rating

__all__ = ["Judgment", "ParsedRating", "PrivilegedCritic", "parse_rating", "with_rates"]
