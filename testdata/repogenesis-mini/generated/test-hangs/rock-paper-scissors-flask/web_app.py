"""`rock-paper-scissors-flask` whose results page never finishes (one byte a second)."""

import random
import time

from flask import Flask, Response, request

app = Flask(__name__)

CHOICES = ("rock", "paper", "scissors")
BEATS = {"rock": "scissors", "paper": "rock", "scissors": "paper"}

PAGE = """<!DOCTYPE html>
<html>
<head><title>Rock-Paper-Scissors App</title></head>
<body>
<h1>Rock-Paper-Scissors App</h1>
{body}
</body>
</html>
"""

FORM = """<form action="/results" method="POST">
<select name="choice">
<option value="rock">rock</option>
<option value="paper">paper</option>
<option value="scissors">scissors</option>
</select>
<button type="submit">Play</button>
</form>"""


def outcome(user, computer):
    if user == computer:
        return "It's a tie!"
    return "You win!" if BEATS[user] == computer else "You lose!"


@app.route("/")
def index():
    return PAGE.format(body=FORM)


@app.route("/results", methods=["GET", "POST"])
def results():
    def trickle():
        # Each byte resets the client's read timeout, so the request never ends.
        yield "<!DOCTYPE html>\n<html>"
        while True:
            time.sleep(1)
            yield " "

    return Response(trickle(), mimetype="text/html")


if __name__ == "__main__":
    app.run(host="0.0.0.0", port=5000, threaded=True)
