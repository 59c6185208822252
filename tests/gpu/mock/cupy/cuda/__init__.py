import mockdev

from . import memory  # noqa: F401


class runtime:  # noqa: N801
    @staticmethod
    def memGetInfo():  # noqa: N802
        return mockdev.mem_info()


class Device:
    def synchronize(self):
        pass
