from flask import Flask

from .views.users import users
from .views import admin


def create_app():
    app = Flask(__name__)
    app.register_blueprint(users, url_prefix="/api/users")
    app.register_blueprint(admin.bp)

    @app.route("/")
    def index():
        return "home"

    return app
