from shop.basket import Basket
