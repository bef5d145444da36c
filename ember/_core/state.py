"""Global dispatch state read on every operator call.

Kept in one tiny object so the hot path does one attribute load per question:
is grad mode on, is any mode or override active.
"""


class _State:
    __slots__ = ("grad_enabled", "inference", "modes", "intercept", "anomaly", "seq", "forward",
                 "overrides")

    def __init__(self):
        self.grad_enabled = True
        self.inference = False
        self.modes = []          # dispatch modes, innermost last
        self.intercept = False   # True while any mode is pushed: apply() takes the slow path
        self.anomaly = False     # detect_anomaly
        self.seq = 0             # creation counter of autograd nodes
        self.forward = 0         # active forward-AD levels
        # > 0 while an __ember_function__ override can be met: live fx Proxies, registered
        # override types (Tensor subclasses defining it register themselves).  Public
        # functions scan their arguments for overrides only then.
        self.overrides = 0


STATE = _State()
