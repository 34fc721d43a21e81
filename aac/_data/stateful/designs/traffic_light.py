"""A traffic light: new() starts at 'red'; {advance}() moves red -> green -> yellow -> red and returns the new
colour, except that while in service mode it stays 'flashing'; {state}() returns the colour; {service}(on) turns
service mode on (the light shows 'flashing') or off (back to 'red') and returns the colour; {cycles}() returns
how many times the light has come back to red by advancing."""


class TrafficLight:
    ORDER = {"red": "green", "green": "yellow", "yellow": "red"}

    def __init__(self):
        self.colour = "red"
        self.flashing = False
        self.turns = 0

    def advance(self):
        if self.flashing:
            return "flashing"
        self.colour = self.ORDER[self.colour]
        if self.colour == "red":
            self.turns += 1
        return self.colour

    def state(self):
        return "flashing" if self.flashing else self.colour

    def service(self, on):
        self.flashing = bool(on)
        if not on:
            self.colour = "red"
        return self.state()

    def cycles(self):
        return self.turns


SEEDS = [
    [("new", ()), ("advance", ()), ("advance", ()), ("advance", ()), ("cycles", ())],
    [("new", ()), ("service", (True,)), ("advance", ()), ("service", (False,)), ("state", ())],
]
