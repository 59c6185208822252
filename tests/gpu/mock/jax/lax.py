class Precision:
    HIGHEST = "highest"
