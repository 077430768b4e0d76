"""A script outside any package."""
from mylib.stats import mean
from helpers import banner


def main():
    banner()
    print(mean([1, 2, 3]))


main()
