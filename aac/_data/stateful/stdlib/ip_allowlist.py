"""An IPv4 allow-list of networks (ipaddress): new() allows nothing; {allow}(cidr) adds the network written
like '10.0.0.0/8' (ValueError for an invalid one or one with host bits set) and returns its number of
addresses; {is_allowed}(address) returns True when the address is in some allowed network (ValueError for an
invalid address); {networks}() returns the allowed networks as strings, collapsed (overlapping and adjacent
networks merged) and sorted; {revoke}(cidr) removes exactly that network (ValueError when it was not added)."""
import ipaddress


class AllowList:
    def __init__(self):
        self.nets = []

    def allow(self, cidr):
        net = ipaddress.IPv4Network(cidr)
        self.nets.append(net)
        return net.num_addresses

    def is_allowed(self, address):
        addr = ipaddress.IPv4Address(address)
        return any(addr in net for net in self.nets)

    def networks(self):
        return [str(n) for n in ipaddress.collapse_addresses(self.nets)]

    def revoke(self, cidr):
        self.nets.remove(ipaddress.IPv4Network(cidr))
        return len(self.nets)


SEEDS = [
    [("new", ()), ("allow", ("10.0.0.0/8",)), ("is_allowed", ("10.1.2.3",)), ("is_allowed", ("11.0.0.1",))],
    [("new", ()), ("allow", ("192.168.0.0/25",)), ("allow", ("192.168.0.128/25",)), ("networks", ())],
    [("new", ()), ("allow", ("10.0.0.1/8",)), ("allow", ("1.2.3.4/32",)), ("revoke", ("1.2.3.4/32",)),
     ("revoke", ("1.2.3.4/32",))],
]
