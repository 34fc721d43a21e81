"""The privileged critic (docs/method.md §5): prompts, rating parsing or log-prob scoring, coverage
informativeness, batching, caching, health counters, and the report card."""

from aac.critic.build import make_critic
from aac.critic.card import NEVER_CHECKED, card_headline, card_status
from aac.critic.critic import PrivilegedCritic, with_rates
from aac.critic.judgment import Critic, Judgment
from aac.critic.parsing import ParsedRating, parse_rating

__all__ = ["NEVER_CHECKED", "Critic", "Judgment", "ParsedRating", "PrivilegedCritic", "card_headline", "card_status",
           "make_critic", "parse_rating", "with_rates"]
