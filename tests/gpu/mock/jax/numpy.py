import math

from mockdev import Mat

float32, int32 = "float32", "int32"
pi = math.pi


def zeros(shape, dtype=None):
    from jax import Array
    return Array(Mat.zeros(), shape=shape)


def asarray(x, dtype=None):
    """A scalar (what the rows pass: a loop bound) as a device array."""
    from jax import Array
    return Array(Mat.full(float(x)), shape=())


def dot(x, y, precision=None):
    return x @ y


def ones(shape, dtype=None):
    from jax import Array
    return Array(nbytes=shape[0] * 4)


def mean(x):
    from jax import Array
    return Array(Mat.full(x.mat.mean()), shape=())


def abs(x):  # noqa: A001
    return x._op(lambda a: a.abs())


def zeros_like(x):
    from jax import Array
    return Array(Mat.zeros(), shape=x.shape)


def sum(x):  # noqa: A001
    """The total of every element, a scalar."""
    return x._op(lambda a: a.total(), shape=())


def tanh(x):
    return x._op(lambda a: a._map(math.tanh))


def sqrt(x):
    if isinstance(x, (int, float)):
        return math.sqrt(x)
    return x._op(lambda a: a._map(math.sqrt))


def where(cond, x, y):
    """Elementwise pick; cond a scalar array (clip_by_global_norm's) or as x."""
    def pick(c, a, b):
        return Mat([[u if k else v for u, v, k in zip(ra, rb, rc)] for ra, rb, rc in zip(a.rows, b.rows, c.rows)])
    return cond._op(pick, x, y, shape=x.shape)
