def tree_map(f, tree, *rest):
    """Over lists and tuples of arrays (what the rows pass)."""
    if isinstance(tree, (list, tuple)):
        return type(tree)(tree_map(f, t, *[r[i] for r in rest]) for i, t in enumerate(tree))
    return f(tree, *rest)


def leaves(tree):
    if isinstance(tree, (list, tuple)):
        return [x for t in tree for x in leaves(t)]
    return [tree] if hasattr(tree, "buf") else []
