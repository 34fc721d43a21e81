"""A thermostat with hysteresis: new(target, band) sets the target temperature and the dead band; {reading}(t)
records a temperature and returns the mode: 'heat' when t < target - band, 'cool' when t > target + band, and
otherwise the previous mode ('idle' at first); {set_target}(target) changes the target and returns it; {mode}()
returns the current mode; {history}() returns the last three readings, oldest first."""


class Thermostat:
    def __init__(self, target, band):
        self.target = target
        self.band = band
        self.mode_ = "idle"
        self.readings = []

    def reading(self, t):
        self.readings.append(t)
        if t < self.target - self.band:
            self.mode_ = "heat"
        elif t > self.target + self.band:
            self.mode_ = "cool"
        return self.mode_

    def set_target(self, target):
        self.target = target
        return target

    def mode(self):
        return self.mode_

    def history(self):
        return self.readings[-3:]


SEEDS = [
    [("new", (20, 1)), ("reading", (18,)), ("reading", (20,)), ("reading", (22,)), ("mode", ())],
    [("new", (15, 0.5)), ("reading", (15,)), ("set_target", (25,)), ("reading", (15.2,)), ("history", ())],
]
