from flask import Flask

from shop.basket import Basket

app = Flask(__name__)


@app.get('/total')
def total():
    return {'total': Basket().total()}
