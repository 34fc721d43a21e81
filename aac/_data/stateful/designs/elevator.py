"""An elevator on floors 0..top: new(top) starts it at floor 0; {request}(floor) queues a floor (ValueError outside
0..top; a floor already queued is not queued twice) and returns the queue; {step}() moves one floor toward the
oldest queued floor, removing it from the queue on arrival, and returns the floor it is at (it stays put with an
empty queue); {floor}() returns the current floor; {pending}() returns the number of queued floors."""


class Elevator:
    def __init__(self, top):
        self.top = top
        self.at = 0
        self.queue = []

    def request(self, floor):
        if not 0 <= floor <= self.top:
            raise ValueError(f"no floor {floor}")
        if floor not in self.queue:
            self.queue.append(floor)
        return list(self.queue)

    def step(self):
        if self.queue:
            target = self.queue[0]
            if target > self.at:
                self.at += 1
            elif target < self.at:
                self.at -= 1
            if self.at == target:
                self.queue.pop(0)
        return self.at

    def floor(self):
        return self.at

    def pending(self):
        return len(self.queue)


SEEDS = [
    [("new", (5,)), ("request", (2,)), ("step", ()), ("step", ()), ("pending", ())],
    [("new", (3,)), ("request", (4,)), ("request", (0,)), ("step", ()), ("floor", ())],
]
