def main(n: int):
    return n * 2
