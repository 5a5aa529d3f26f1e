"""A monotonic clock a test moves by hand: `now` is what it reads."""


class ManualClock:
    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now
