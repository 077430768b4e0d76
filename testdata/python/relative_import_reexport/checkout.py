"""Checkout script using the package's re-exported names."""
import shop
import shop.payments.gateway as gw
from shop import Cart, pay, format_price


def main():
    cart = Cart()
    cart.add("book", 12.5)
    receipt = pay(cart, "4242")
    print(format_price(cart.total()))
    gw.charge(cart, "0000")
    shop.cart.Cart().describe()
    return receipt


if __name__ == "__main__":
    main()
