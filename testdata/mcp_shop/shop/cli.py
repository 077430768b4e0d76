import argparse

from shop.basket import Basket


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('path')
    args = parser.parse_args()
    basket = Basket()
    print(basket.total())


if __name__ == '__main__':
    main()
