from mockdev import Mat

float32 = "float32"


def zeros(shape, dtype=None):
    from jax import Array
    return Array(Mat.zeros())


def dot(x, y, precision=None):
    from jax import Array
    return Array(x.mat @ y.mat)


def ones(shape, dtype=None):
    from jax import Array
    return Array(nbytes=shape[0] * 4)
