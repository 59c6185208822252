from mockdev import Mat

float32 = "float32"


def zeros(shape, dtype=None):
    from jax import Array
    return Array(Mat.zeros(), shape=shape)


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
