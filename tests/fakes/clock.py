"""A clock the test moves by hand: call it for the time, set or add to `now`."""


class Clock:
    def __init__(self, now: float = 0.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now
