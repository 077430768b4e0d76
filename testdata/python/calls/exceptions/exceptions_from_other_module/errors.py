class BaseError(Exception):
    def __init__(self, who):
        super().__init__(who)
        self.who = who

    def message(self):
        return f"denied: {self.who}"


class NotAllowed(BaseError):
    pass
