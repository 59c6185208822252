from mockdev import mem_info


def mem_get_info():
    return mem_info()


def synchronize():
    pass
