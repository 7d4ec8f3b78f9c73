"""Module doc."""
import os


# helper comment
@decorator
def top(a,
        b):
    """Doc
with text at column 0
    """
    return a


class Engine:
    x = 1

    @property
    def ask(self):
        return 1

    async def run(
        self,
    ):
        def inner():
            pass
        return inner

CONST = 2
