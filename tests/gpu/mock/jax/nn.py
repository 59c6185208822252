def relu(x):
    return x._op(lambda a: a.relu())
