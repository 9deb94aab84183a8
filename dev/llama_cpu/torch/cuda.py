"""torch.cuda of the CPU stand-in (dev/llama_cpu/torch): host timers for events, graphs that
replay nothing (the captured output stays what the capture computed), TunableOp's switches."""
import contextlib
import time
import types


def is_available():
    return True


def get_device_name(i=0):
    return "CPU stand-in (no GPU)"


def synchronize():
    pass


def empty_cache():
    pass


def _sleep(cycles):
    pass


class Event:
    def __init__(self, enable_timing=False):
        self.t = None

    def record(self, stream=None):
        self.t = time.perf_counter()

    def synchronize(self):
        pass

    def query(self):
        return True

    def elapsed_time(self, end):
        return (end.t - self.t) * 1e3


class Stream:
    def wait_stream(self, other):
        pass


def current_stream():
    return Stream()


def stream(s):
    return contextlib.nullcontext()


class CUDAGraph:
    def replay(self):
        pass


def graph(g):
    return contextlib.nullcontext()


class _Tunable:
    def __init__(self):
        self.on, self.results = False, []

    def enable(self, on=True):
        self.on = bool(on)

    def tuning_enable(self, on=True):
        pass

    def get_results(self):
        return [("GemmTunableOp_BFloat16_TN", "tn_stand_in", "Default", "0.0")]


tunable = _Tunable()
_C = types.SimpleNamespace()
