"""The loyalty scheme: points for spending, vouchers for points."""

RATES = {"basic": 1, "silver": 2, "gold": 3}
UPGRADE_AT = {"basic": 500, "silver": 2000}


class LoyaltyAccount:
    """A member's loyalty account: points earned per whole euro spent at the tier's rate (basic 1,
    silver 2, gold 3), tiers raised as lifetime points grow, and points redeemed for vouchers."""

    def __init__(self, member, tier="basic"):
        if tier not in RATES:
            raise ValueError(f"unknown tier {tier}")
        self.member = member.strip().title()
        self.tier = tier
        self.points = 0
        self.lifetime = 0

    def earn(self, amount):
        """Credit a purchase of amount euros; returns the points it earned. Reaching 500 lifetime points
        makes a basic member silver, 2000 a silver member gold."""
        earned = int(amount) * RATES[self.tier]
        self.points += earned
        self.lifetime += earned
        while self.tier in UPGRADE_AT and self.lifetime >= UPGRADE_AT[self.tier]:
            self.tier = "silver" if self.tier == "basic" else "gold"
        return earned

    def redeem(self, points):
        """Trade points, a multiple of 100, for a voucher worth 1 euro per 100 points; returns the
        voucher's value. Too few points or another amount raises ValueError."""
        if points <= 0 or points % 100:
            raise ValueError("redeem a positive multiple of 100 points")
        if points > self.points:
            raise ValueError("not enough points")
        self.points -= points
        return points // 100

    @property
    def status(self):
        """The member's name, tier and points as the till shows them."""
        return f"{self.member} ({self.tier}): {self.points} points"
