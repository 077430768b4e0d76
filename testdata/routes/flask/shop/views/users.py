from flask import Blueprint, jsonify

users = Blueprint("users", __name__, url_prefix="/ignored-when-registered-with-a-prefix")


@users.get("/")
def list_users():
    return jsonify([])


@users.route("/<int:user_id>", methods=["GET", "PUT"])
def user(user_id):
    return jsonify(_load(user_id))


@users.delete("/<int:user_id>")
def delete_user(user_id):
    return "", 204


def _load(user_id):
    return {"id": user_id}
