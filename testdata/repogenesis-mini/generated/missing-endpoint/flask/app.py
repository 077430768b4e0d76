"""Reference implementation of the RepoGenesis `flask` task: health and echo; the sum endpoint is missing."""

from flask import Flask, jsonify, request

app = Flask(__name__)


@app.get("/health")
def health():
    return jsonify({"status": "ok"}), 200


@app.post("/echo")
def echo():
    data = request.get_json(silent=True) if request.is_json else None
    if not isinstance(data, dict) or not isinstance(data.get("message"), str):
        return jsonify({"error": "body must be JSON with a string 'message'"}), 400
    message = data["message"]
    return jsonify({"message": message, "length": len(message)}), 200


if __name__ == "__main__":
    app.run(host="0.0.0.0", port=5000)
