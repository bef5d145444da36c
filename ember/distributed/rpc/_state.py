"""The process's RPC agent, set by init_rpc and cleared by shutdown."""
_AGENT = [None]


def agent():
    a = _AGENT[0]
    if a is None:
        raise RuntimeError("RPC has not been initialized. Call ember.distributed.rpc.init_rpc "
                           "first.")
    return a


def set_agent(a):
    _AGENT[0] = a
