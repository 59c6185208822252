"""jax.lax stand-in: Precision, and the loops a jitted step runs
(fori_loop, while_loop), computed in Python. Inside a jitted call each loop
is one while loop of XLA's: its iterations are told to the call (jax.jit's
stand-in of XLA's command buffers), which runs it in a WHILE conditional
node of its graph, or from the host (see jax._CommandBuffers)."""


class Precision:
    HIGHEST = "highest"


def _count(value):
    """A loop bound or condition as a Python number: an array's first value
    (as computed: never MOCK_FAULT's), else the number itself."""
    return value.value() if hasattr(value, "value") else value


def _ran(iterations):
    import jax
    if jax._loops is not None:
        jax._loops.append(iterations)


def while_loop(cond_fun, body_fun, init_val):
    val, n = init_val, 0
    while _count(cond_fun(val)):
        val = body_fun(val)
        n += 1
    _ran(n)
    return val


def fori_loop(lower, upper, body_fun, init_val):
    lo, hi = int(_count(lower)), int(_count(upper))
    val = init_val
    for i in range(lo, hi):
        val = body_fun(i, val)
    _ran(max(hi - lo, 0))
    return val
